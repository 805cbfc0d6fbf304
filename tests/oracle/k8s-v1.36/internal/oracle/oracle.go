// Package oracle holds what kaudit's two upstream oracle programs share: decoding the
// Kubernetes objects and the KubeSchedulerConfiguration of a request, and building upstream's
// own scheduler (pkg/scheduler.New, the in-tree plugin registry, the scheduler cache and the
// scheduling queue as nominator) over a fake clientset holding those objects.
//
// Everything that decides a scheduling outcome is upstream's code, linked from
// k8s.io/kubernetes v1.36.3; this package only wires it the way cmd/kube-scheduler/app
// (server.go Setup and Run, options/configfile.go loadConfig) does.
package oracle

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/kubernetes/pkg/scheduler"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/profile"
)

// DefaultSchedulerName is the profile a pod without spec.schedulerName goes to (the API server
// would have defaulted the field).
const DefaultSchedulerName = "default-scheduler"

func init() {
	// The fake clientset's watchers are buffered channels of this size; a full one panics.
	// Sequences create thousands of events, so make them large.
	watch.DefaultChanSize = 1 << 16
}

// Quiet silences klog (upstream logs to stderr, which the callers keep for errors).
func Quiet() {
	klog.SetOutput(discard{})
	klog.LogToStderr(false)
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// namespaced lists the kinds whose objects default to namespace "default" when they have none.
var namespaced = map[string]bool{
	"Pod": true, "PersistentVolumeClaim": true, "PodDisruptionBudget": true, "ResourceClaim": true,
	"Service": true, "ReplicaSet": true, "StatefulSet": true, "ReplicationController": true,
	"ConfigMap": true, "Secret": true,
}

// DecodeObjects decodes JSON Kubernetes objects (a "List" is expanded into its items) into
// typed objects of client-go's scheme. A namespaced object without a namespace is put in
// "default"; a pod without a UID gets one derived from its name.
func DecodeObjects(raws []json.RawMessage) ([]runtime.Object, error) {
	var out []runtime.Object
	for i, raw := range raws {
		var head struct {
			APIVersion string            `json:"apiVersion"`
			Kind       string            `json:"kind"`
			Items      []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, fmt.Errorf("object %d: %w", i, err)
		}
		if head.Kind == "List" || strings.HasSuffix(head.Kind, "List") && head.Items != nil {
			items, err := DecodeObjects(head.Items)
			if err != nil {
				return nil, fmt.Errorf("object %d (%s): %w", i, head.Kind, err)
			}
			out = append(out, items...)
			continue
		}
		obj, err := DecodeObject(raw)
		if err != nil {
			return nil, fmt.Errorf("object %d (%s %s): %w", i, head.APIVersion, head.Kind, err)
		}
		out = append(out, obj)
	}
	return out, nil
}

// DecodeObject decodes one JSON Kubernetes object (apiVersion and kind required).
func DecodeObject(raw []byte) (runtime.Object, error) {
	obj, gvk, err := clientscheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
	if err != nil {
		return nil, err
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	if acc.GetNamespace() == "" && namespaced[gvk.Kind] {
		acc.SetNamespace("default")
	}
	if pod, ok := obj.(*v1.Pod); ok {
		NormalizePod(pod)
	}
	return obj, nil
}

// NormalizePod fills what the API server would have: a UID and the default scheduler name.
func NormalizePod(pod *v1.Pod) {
	if pod.Namespace == "" {
		pod.Namespace = "default"
	}
	if pod.UID == "" {
		pod.UID = types.UID("kaudit-oracle-" + pod.Namespace + "-" + pod.Name)
	}
	if pod.Spec.SchedulerName == "" {
		pod.Spec.SchedulerName = DefaultSchedulerName
	}
}

// DecodePod decodes the JSON of one pod.
func DecodePod(raw []byte) (*v1.Pod, error) {
	obj, err := DecodeObject(raw)
	if err != nil {
		return nil, err
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return nil, fmt.Errorf("expected a Pod, got %T", obj)
	}
	return pod, nil
}

// LoadConfig decodes a KubeSchedulerConfiguration as kube-scheduler does (the universal
// decoder applies the v1 defaults; cmd/kube-scheduler/app/options/configfile.go loadConfig)
// and validates it. No config (nil) or an empty text gives the defaults (scheduler.New's
// applyDefaultProfile).
func LoadConfig(config *string) (*schedconfig.KubeSchedulerConfiguration, error) {
	text := ""
	if config != nil {
		text = *config
	}
	cfg := &schedconfig.KubeSchedulerConfiguration{}
	if strings.TrimSpace(text) == "" {
		var versioned configv1.KubeSchedulerConfiguration
		scheme.Scheme.Default(&versioned)
		if err := scheme.Scheme.Convert(&versioned, cfg, nil); err != nil {
			return nil, err
		}
		cfg.TypeMeta.APIVersion = configv1.SchemeGroupVersion.String()
	} else {
		obj, gvk, err := scheme.Codecs.UniversalDecoder().Decode([]byte(text), nil, nil)
		if err != nil {
			return nil, fmt.Errorf("decoding the configuration: %w", err)
		}
		decoded, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
		if !ok {
			return nil, fmt.Errorf("couldn't decode as KubeSchedulerConfiguration, got %s", gvk)
		}
		decoded.TypeMeta.APIVersion = gvk.GroupVersion().String()
		cfg = decoded
	}
	if err := validation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	if len(cfg.Extenders) != 0 {
		return nil, fmt.Errorf("scheduler extenders are not supported by the oracle")
	}
	return cfg, nil
}

// rvTracker gives every write a new resourceVersion, as the API server does: upstream's
// queue ignores a pod update whose resourceVersion did not change (updatePodInSchedulingQueue),
// so without it the scheduler's own status patches (nominations) would never reach the queue.
type rvTracker struct {
	clienttesting.ObjectTracker
	mu sync.Mutex
	n  int64
}

func (t *rvTracker) bump(obj runtime.Object) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n++
	if a, err := meta.Accessor(obj); err == nil {
		a.SetResourceVersion(fmt.Sprint(t.n))
	}
}

func (t *rvTracker) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.CreateOptions) error {
	t.bump(obj)
	return t.ObjectTracker.Create(gvr, obj, ns, opts...)
}

func (t *rvTracker) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.UpdateOptions) error {
	t.bump(obj)
	return t.ObjectTracker.Update(gvr, obj, ns, opts...)
}

func (t *rvTracker) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	t.bump(obj)
	return t.ObjectTracker.Patch(gvr, obj, ns, opts...)
}

// Cluster is upstream's scheduler built over a fake clientset.
type Cluster struct {
	Client          *fake.Clientset
	InformerFactory informers.SharedInformerFactory
	Scheduler       *scheduler.Scheduler
	Config          *schedconfig.KubeSchedulerConfiguration
	// Tracker is the clientset's object tracker as its reactors write through it (every write
	// a new resourceVersion); a reactor that writes objects itself writes through it too.
	Tracker clienttesting.ObjectTracker

	podWatchMu      sync.Mutex
	podWatchStarted chan struct{}
}

// NewCluster puts the objects into a fake clientset and builds upstream's scheduler over it,
// with the options cmd/kube-scheduler/app Setup passes. Informers are not started.
func NewCluster(ctx context.Context, objects []runtime.Object, cfg *schedconfig.KubeSchedulerConfiguration,
	outOfTree frameworkruntime.Registry) (*Cluster, error) {
	client := fake.NewSimpleClientset(objects...)
	tracker := &rvTracker{ObjectTracker: client.Tracker()}
	client.PrependReactor("*", "*", clienttesting.ObjectReaction(tracker))
	c := &Cluster{Client: client, Tracker: tracker, Config: cfg, podWatchStarted: make(chan struct{})}
	// The fake clientset misses objects created between an informer's List and its Watch;
	// callers creating pods after the informers start wait for the pod watch first.
	client.PrependWatchReactor("pods", func(action clienttesting.Action) (bool, watch.Interface, error) {
		c.podWatchMu.Lock()
		defer c.podWatchMu.Unlock()
		select {
		case <-c.podWatchStarted:
		default:
			close(c.podWatchStarted)
		}
		return false, nil, nil
	})
	factory := scheduler.NewInformerFactory(client, 0)
	recorderFactory := profile.RecorderFactory(func(string) events.EventRecorderLogger { return &events.FakeRecorder{} })
	if outOfTree == nil {
		outOfTree = frameworkruntime.Registry{}
	}
	sched, err := scheduler.New(ctx, client, factory, nil, recorderFactory,
		scheduler.WithComponentConfigVersion(cfg.TypeMeta.APIVersion),
		scheduler.WithProfiles(cfg.Profiles...),
		scheduler.WithPercentageOfNodesToScore(cfg.PercentageOfNodesToScore),
		scheduler.WithFrameworkOutOfTreeRegistry(outOfTree),
		scheduler.WithPodMaxBackoffSeconds(cfg.PodMaxBackoffSeconds),
		scheduler.WithPodInitialBackoffSeconds(cfg.PodInitialBackoffSeconds),
		scheduler.WithPodMaxInUnschedulablePodsDuration(5*time.Minute),
		scheduler.WithParallelism(cfg.Parallelism),
	)
	if err != nil {
		return nil, err
	}
	c.InformerFactory = factory
	c.Scheduler = sched
	return c, nil
}

// Start starts the informers and waits, as cmd/kube-scheduler/app Run does, until their caches
// and the scheduler's event handlers are synced.
func (c *Cluster) Start(ctx context.Context) error {
	c.InformerFactory.Start(ctx.Done())
	for typ, ok := range c.InformerFactory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("informer for %v did not sync", typ)
		}
	}
	if err := c.Scheduler.WaitForHandlersSync(ctx); err != nil {
		return err
	}
	select {
	case <-c.podWatchStarted:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("the pod informer did not start watching")
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// PodKey is "namespace/name".
func PodKey(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }
