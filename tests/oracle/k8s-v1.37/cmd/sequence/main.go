// Command sequence runs a sequence of pods through upstream kube-scheduler v1.37's whole
// scheduler (pkg/scheduler.New and Scheduler.Run: queue, cache, scheduling and binding cycles,
// preemption) over a fake clientset, for kaudit's differential tests.
//
// Input: one JSON document on stdin,
//
//	{"objects": [...], "pending": [pods in creation order], "config": yaml|null,
//	 "quietSeconds": 2, "prefer": {"ns/name": "node"}|null, "syncPreemption": false,
//	 "history": false}
//
// Output: one JSON document,
//
//	{"pods": {"ns/name": {"node": str|null, "message": str|null, "nominated": str|null, "deleted": bool}},
//	 "history": [{"us": int, "type": "ADDED"|"MODIFIED"|"DELETED", "object": Pod}, ...]}
//
// "pods" has every pod of the input (the bound ones of "objects" too); "message" is the last
// PodScheduled=False message the pod carried (a binding replaces the condition with
// PodScheduled=True). "history" (only when the request asks for it) is every change to every
// Pod in the fake API server, in the order it made them: the pending pods' creations,
// bindings, the scheduler's status patches, deletions; each with the full pod after the change
// (a deletion: its last state) and when it was made, in microseconds since the informers were
// synced (history.go).
//
// The cluster objects are put in the clientset first, the informers started and synced, then
// the pending pods created in order (so the queue sees them in that order) before Run.
// pods/binding does to the pod what the API server's binding storage does, and status writes
// are refused where its validation refuses them (binding.go). The run stops after
// quietSeconds without a binding, deletion or pod update, once no pod waits in the queue's
// activeQ or backoffQ (the pods left are unschedulable until some event), or after maxSeconds
// (default 600).
//
// Upstream runs at v1.37.2's default feature gates and does what v1.37 does, not forced back
// to an older release's behaviour:
//   - NominatedNodeNameForExpectation (Beta, on since v1.35): the binding cycle runs
//     PreBindPreFlight and, when a PreBind plugin has work (e.g. unbound PVCs, resource claims)
//     or the pod waits on Permit, patches status.nominatedNodeName to the chosen node before
//     PreBind/Bind;
//   - ClearingNominatedNodeNameAfterBinding (Beta, on since v1.35, an API-server gate): the
//     binding clears status.nominatedNodeName, so a bound pod ends with "nominated": null (a
//     preemptor included), and a status write setting a nomination on a bound pod is refused
//     (binding.go);
//   - PodTopologyLabelsAdmission (Beta, on since v1.35, API server): a binding copies the
//     node's topology.kubernetes.io/zone and /region labels onto the pod (binding.go);
//   - OpportunisticBatching (Beta, on): a pod with status.nominatedNodeName never takes a hint
//     and the last chosen node is rescored rather than dropped; with the default profile
//     PodTopologySpread's system default constraints still refuse every signature
//     (podtopologyspread/plugin.go SignPod), so no node hint is ever used;
//   - NodeDeclaredFeatures (GA, locked on; on by default since v1.36): a default
//     PreFilter/Filter plugin; a pod whose spec requires a node feature (e.g. a
//     RestartAllContainers restart rule) fits only nodes declaring it;
//   - StorageCapacityScoring (Beta, on by default from v1.37): VolumeBinding scores nodes
//     (default shape: 100 minus the storage utilisation) and is in every node's scores;
//     VolumeLimitScaling (Beta, now on): NodeVolumeLimits rejects a node lacking a CSI driver
//     whose CSIDriver sets preventPodSchedulingIfMissing; DRADeviceTaintRules (GA, now on):
//     DeviceTaintRules taint DRA devices;
//   - ungated v1.37 changes: a successful preemption's PostFilter status carries "preemption:
//     found a potential placement for pod on node N, preempting K victims" and
//     DynamicResources' PostFilter gives no "no new claims to deallocate" reason, so
//     PodScheduled=False messages change; gated pods' nominations are recorded when they enter
//     the queue; InterPodAffinity replaces a term's namespaceSelector by the namespaces it
//     selects; ImageLocality counts image volumes in its threshold; pod events are split into
//     AssignedPod/UnscheduledPod/TargetPod; among equally top-scored nodes schedulePod still
//     takes the root of a heap over the feasible nodes in the order the filter workers found
//     them (no random tie-break without extenders); failures always clear the nomination.
//
// prefer: every Score weight of every profile is doubled and an out-of-tree Score plugin of
// weight 1 (raw score 1 on the preferred node, 0 elsewhere, no normalisation) is added, so
// upstream picks the preferred node only among its own top-scored ties. The plugin signs pods
// (fwk.SignPlugin, with the preferred node as its fragment), so OpportunisticBatching stays
// as it is without prefer.
//
// syncPreemption: the SchedulerAsyncPreemption gate is turned off (victims are deleted inside
// PostFilter), and after each failed scheduling cycle the program waits until the scheduler
// cache has dropped the deleted pods, so they are gone before the next pod's cycle.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"kaudit.test/oracle/v1_37/internal/oracle"
)

type request struct {
	Objects        []json.RawMessage `json:"objects"`
	Pending        []json.RawMessage `json:"pending"`
	Config         *string           `json:"config"`
	QuietSeconds   *float64          `json:"quietSeconds"`
	MaxSeconds     *float64          `json:"maxSeconds"`
	Prefer         map[string]string `json:"prefer"`
	SyncPreemption bool              `json:"syncPreemption"`
	History        bool              `json:"history"`
}

type podResult struct {
	Node      *string `json:"node"`
	Message   *string `json:"message"`
	Nominated *string `json:"nominated"`
	Deleted   bool    `json:"deleted"`
}

type response struct {
	Pods    map[string]podResult `json:"pods,omitempty"`
	History *[]historyEvent      `json:"history,omitempty"`
	Error   string               `json:"error,omitempty"`
}

// preferName is the out-of-tree Score plugin of the prefer mode.
const preferName = "KauditPrefer"

type preferPlugin struct{ prefer map[string]string }

func (p *preferPlugin) Name() string { return preferName }

func (p *preferPlugin) Score(_ context.Context, _ fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	if node, ok := p.prefer[oracle.PodKey(pod)]; ok && node == nodeInfo.Node().Name {
		return 1, nil
	}
	return 0, nil
}

func (p *preferPlugin) ScoreExtensions() fwk.ScoreExtensions { return nil }

// SignPod makes the plugin a SignPlugin, so that adding it leaves OpportunisticBatching as
// the plain run has it (computeBatchablePlugins turns signatures off for a profile with a
// Score plugin that is not one). Two pods with the same preferred node (or none) get the same
// scores from it, so that node is its fragment.
func (p *preferPlugin) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return []fwk.SignFragment{{Key: "kaudit.PreferredNode()", Value: p.prefer[oracle.PodKey(pod)]}}, nil
}

var _ fwk.SignPlugin = &preferPlugin{}

func main() {
	oracle.Quiet()
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	var req request
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		_ = enc.Encode(response{Error: "reading the request: " + err.Error()})
		os.Exit(1)
	}
	pods, history, err := run(req)
	if err != nil {
		_ = enc.Encode(response{Error: err.Error()})
		os.Exit(1)
	}
	answer := response{Pods: pods}
	if req.History {
		answer.History = &history
	}
	if err := enc.Encode(answer); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// preferConfig doubles every profile's Score weights and adds the prefer plugin with weight 1.
func preferConfig(cfg *schedconfig.KubeSchedulerConfiguration) {
	double := func(ps []schedconfig.Plugin) {
		for i := range ps {
			w := ps[i].Weight
			if w == 0 {
				w = 1 // NewFramework's getScoreWeights: a zero weight counts as 1
			}
			ps[i].Weight = 2 * w
		}
	}
	for i := range cfg.Profiles {
		plugins := cfg.Profiles[i].Plugins
		if plugins == nil {
			plugins = &schedconfig.Plugins{}
			cfg.Profiles[i].Plugins = plugins
		}
		double(plugins.MultiPoint.Enabled)
		double(plugins.Score.Enabled)
		plugins.Score.Enabled = append(plugins.Score.Enabled, schedconfig.Plugin{Name: preferName, Weight: 1})
	}
}

type tracker struct {
	mu        sync.Mutex
	last      time.Time
	lastKnown map[string]*v1.Pod // by ns/name: the last object seen (deleted pods keep theirs)
	deleted   map[types.UID]*v1.Pod
}

func (t *tracker) touch() {
	t.mu.Lock()
	t.last = time.Now()
	t.mu.Unlock()
}

func (t *tracker) idle() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return time.Since(t.last)
}

func run(req request) (map[string]podResult, []historyEvent, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx = klog.NewContext(ctx, klog.Background())

	if req.SyncPreemption {
		if err := utilfeature.DefaultMutableFeatureGate.Set("SchedulerAsyncPreemption=false"); err != nil {
			return nil, nil, err
		}
	}
	objects, err := oracle.DecodeObjects(req.Objects)
	if err != nil {
		return nil, nil, err
	}
	pendingObjs, err := oracle.DecodeObjects(req.Pending)
	if err != nil {
		return nil, nil, fmt.Errorf("pending: %w", err)
	}
	var pending []*v1.Pod
	for _, o := range pendingObjs {
		p, ok := o.(*v1.Pod)
		if !ok {
			return nil, nil, fmt.Errorf("pending: expected pods, got %T", o)
		}
		pending = append(pending, p)
	}
	cfg, err := oracle.LoadConfig(req.Config)
	if err != nil {
		return nil, nil, err
	}
	outOfTree := frameworkruntime.Registry{}
	if req.Prefer != nil {
		preferConfig(cfg)
		prefer := req.Prefer
		outOfTree[preferName] = func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
			return &preferPlugin{prefer: prefer}, nil
		}
	}
	quiet := 2 * time.Second
	if req.QuietSeconds != nil {
		quiet = time.Duration(*req.QuietSeconds * float64(time.Second))
	}
	maxRun := 600 * time.Second
	if req.MaxSeconds != nil {
		maxRun = time.Duration(*req.MaxSeconds * float64(time.Second))
	}

	cluster, err := oracle.NewCluster(ctx, objects, cfg, outOfTree)
	if err != nil {
		return nil, nil, err
	}
	tr := &tracker{last: time.Now(), lastKnown: map[string]*v1.Pod{}, deleted: map[types.UID]*v1.Pod{}}
	history := newPodHistory()
	order := []string{}
	for _, o := range objects {
		if p, ok := o.(*v1.Pod); ok {
			tr.lastKnown[oracle.PodKey(p)] = p
			history.seen(p)
			order = append(order, oracle.PodKey(p))
		}
	}
	for _, p := range pending {
		tr.lastKnown[oracle.PodKey(p)] = p
		order = append(order, oracle.PodKey(p))
	}
	client := cluster.Client
	objTracker := &recordingTracker{ObjectTracker: &apiValidator{ObjectTracker: cluster.Tracker}, history: history}
	// Pods are written through objTracker (so every change is recorded); pods/binding as the
	// API server's binding storage does it.
	client.PrependReactor("*", "pods", clienttesting.ObjectReaction(objTracker))
	client.PrependReactor("create", "pods", bindingReactor(objTracker))
	// Every write to a pod counts as activity; a deletion remembers the pod.
	client.PrependReactor("*", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		switch action.GetVerb() {
		case "create", "update", "patch", "delete":
			tr.touch()
		}
		if da, ok := action.(clienttesting.DeleteAction); ok {
			if obj, err := objTracker.Get(podsGVR, da.GetNamespace(), da.GetName()); err == nil {
				pod := obj.(*v1.Pod)
				tr.mu.Lock()
				tr.lastKnown[oracle.PodKey(pod)] = pod
				tr.deleted[pod.UID] = pod
				tr.mu.Unlock()
			}
		}
		return false, nil, nil
	})

	if err := cluster.Start(ctx); err != nil {
		return nil, nil, err
	}
	history.start()
	sched := cluster.Scheduler
	if req.SyncPreemption {
		orig := sched.FailureHandler
		sched.FailureHandler = func(ctx context.Context, f framework.Framework, p *framework.QueuedPodInfo, status *fwk.Status,
			ni *fwk.NominatingInfo, start time.Time) {
			orig(ctx, f, p, status, ni, start)
			waitForCacheDeletions(tr, sched.Cache.GetPod)
		}
	}
	for _, p := range pending {
		if _, err := client.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return nil, nil, fmt.Errorf("creating pending pod %s: %w", oracle.PodKey(p), err)
		}
	}
	// Wait until the queue holds every pending pod (the informer delivers them in order).
	deadline := time.Now().Add(30 * time.Second)
	for {
		queued, _ := sched.SchedulingQueue.PendingPods()
		missing := missingFromQueue(pending, queued)
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("the scheduling queue is missing %d of the pending pods", missing)
		}
		time.Sleep(5 * time.Millisecond)
	}

	tr.touch()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		sched.Run(runCtx)
		close(done)
	}()
	started := time.Now()
	for time.Since(started) < maxRun {
		if tr.idle() >= quiet && !retrying(sched.SchedulingQueue.PendingPods()) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	<-done

	result := map[string]podResult{}
	for _, key := range order {
		last := tr.lastKnown[key]
		obj, err := objTracker.Get(podsGVR, last.Namespace, last.Name)
		r := podResult{}
		pod := last
		// A deleted pod keeps the message of its last failure too (it may have failed, then
		// been bound, then preempted).
		if m, ok := history.lastFalseMessage(key); ok {
			r.Message = &m
		}
		if err != nil {
			r.Deleted = true
		} else {
			pod = obj.(*v1.Pod)
			if nnn := pod.Status.NominatedNodeName; nnn != "" {
				r.Nominated = &nnn
			}
		}
		if pod.Spec.NodeName != "" {
			n := pod.Spec.NodeName
			r.Node = &n
		}
		result[key] = r
	}
	return result, history.snapshot(), nil
}

// retrying tells, from PendingPods' summary, whether pods wait in activeQ or backoffQ (a pod
// backing off after several failures may wait longer than the quiet period). v1.37 renamed the
// summary's last field (backend/queue/scheduling_queue.go l.2077, pendingPodsSummary:
// "activeQ:%v; backoffQ:%v; unschedulableEntities:%v"; the extended summary of l.2078 is only
// used with GenericWorkload, which is off).
func retrying(_ []*v1.Pod, summary string) bool {
	var active, backoff, unschedulable int
	if _, err := fmt.Sscanf(summary, "activeQ:%d; backoffQ:%d; unschedulableEntities:%d",
		&active, &backoff, &unschedulable); err != nil {
		return false
	}
	return active+backoff > 0
}

// missingFromQueue counts the unbound pending pods the scheduling queue does not hold yet.
func missingFromQueue(pending, queued []*v1.Pod) int {
	in := map[types.UID]bool{}
	for _, p := range queued {
		in[p.UID] = true
	}
	n := 0
	for _, p := range pending {
		if p.Spec.NodeName == "" && !in[p.UID] {
			n++
		}
	}
	return n
}

// waitForCacheDeletions waits (up to 10 s) until the scheduler cache holds none of the deleted
// pods, i.e. the informer has delivered their deletions.
func waitForCacheDeletions(tr *tracker, getPod func(*v1.Pod) (*v1.Pod, error)) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		tr.mu.Lock()
		var left []*v1.Pod
		for _, p := range tr.deleted {
			left = append(left, p)
		}
		tr.mu.Unlock()
		remaining := 0
		for _, p := range left {
			if _, err := getPod(p); err == nil {
				remaining++
			}
		}
		if remaining == 0 {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}
