package main

// The history of the fake API server's pods: every change to a Pod, in the order the tracker
// made them, with the full object after the change (a deletion: the pod's last state).

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"

	"kaudit.test/oracle/v1_37/internal/oracle"
)

// historyEvent is one change to a pod, as a watch of the API server would stream it.
type historyEvent struct {
	// Us is when the change was made: microseconds since the history's origin.
	Us     int64   `json:"us"`
	Type   string  `json:"type"`
	Object *v1.Pod `json:"object"`
}

// podHistory collects the changes; a pod's last PodScheduled=False message is kept apart,
// since a binding replaces that condition with PodScheduled=True.
type podHistory struct {
	mu        sync.Mutex
	origin    time.Time
	events    []historyEvent
	lastFalse map[string]string // by ns/name
}

func newPodHistory() *podHistory {
	return &podHistory{origin: time.Now(), lastFalse: map[string]string{}}
}

// start makes now the origin of the events' times.
func (h *podHistory) start() {
	h.mu.Lock()
	h.origin = time.Now()
	h.mu.Unlock()
}

// seen notes a pod's state (its PodScheduled=False message) without recording a change.
func (h *podHistory) seen(pod *v1.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.noteCondition(pod)
}

func (h *podHistory) noteCondition(pod *v1.Pod) {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
			h.lastFalse[oracle.PodKey(pod)] = c.Message
		}
	}
}

func (h *podHistory) record(eventType string, pod *v1.Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	h.events = append(h.events, historyEvent{Us: time.Since(h.origin).Microseconds(), Type: eventType, Object: pod})
	h.noteCondition(pod)
}

// lastFalseMessage is the message of the last PodScheduled=False condition the pod carried.
func (h *podHistory) lastFalseMessage(key string) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m, ok := h.lastFalse[key]
	return m, ok
}

func (h *podHistory) snapshot() []historyEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]historyEvent(nil), h.events...)
}

// recordingTracker records every successful write of a pod. The fake clientset runs its
// reactors one action at a time (Fake.Invokes holds its lock), so a write and its record are
// never interleaved with another write: the history's order is the tracker's (and its
// watchers').
type recordingTracker struct {
	clienttesting.ObjectTracker
	history *podHistory
}

func (t *recordingTracker) capture(eventType string, gvr schema.GroupVersionResource, ns, name string) {
	if gvr != podsGVR {
		return
	}
	if obj, err := t.ObjectTracker.Get(gvr, ns, name); err == nil {
		t.history.record(eventType, obj.(*v1.Pod))
	}
}

func nameOf(obj runtime.Object) string {
	if a, err := meta.Accessor(obj); err == nil {
		return a.GetName()
	}
	return ""
}

func (t *recordingTracker) Create(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.CreateOptions) error {
	if err := t.ObjectTracker.Create(gvr, obj, ns, opts...); err != nil {
		return err
	}
	t.capture("ADDED", gvr, ns, nameOf(obj))
	return nil
}

func (t *recordingTracker) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.UpdateOptions) error {
	if err := t.ObjectTracker.Update(gvr, obj, ns, opts...); err != nil {
		return err
	}
	t.capture("MODIFIED", gvr, ns, nameOf(obj))
	return nil
}

func (t *recordingTracker) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	if err := t.ObjectTracker.Patch(gvr, obj, ns, opts...); err != nil {
		return err
	}
	t.capture("MODIFIED", gvr, ns, nameOf(obj))
	return nil
}

func (t *recordingTracker) Apply(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	if err := t.ObjectTracker.Apply(gvr, obj, ns, opts...); err != nil {
		return err
	}
	t.capture("MODIFIED", gvr, ns, nameOf(obj))
	return nil
}

func (t *recordingTracker) Delete(gvr schema.GroupVersionResource, ns, name string, opts ...metav1.DeleteOptions) error {
	var last *v1.Pod
	if gvr == podsGVR {
		if obj, err := t.ObjectTracker.Get(gvr, ns, name); err == nil {
			last = obj.(*v1.Pod)
		}
	}
	if err := t.ObjectTracker.Delete(gvr, ns, name, opts...); err != nil {
		return err
	}
	if last != nil {
		t.history.record("DELETED", last)
	}
	return nil
}
