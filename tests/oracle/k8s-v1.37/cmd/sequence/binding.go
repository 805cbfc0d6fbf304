package main

// What the fake API server does that the API server's pod storage and admission would do at
// v1.37.2's default feature gates, beyond storing objects:
//
//   - pods/binding, as the real one stores a binding: pkg/registry/core/pod/storage/storage.go
//     BindingREST.Create, assignPod and setPodNodeAndMetadata. With
//     ClearingNominatedNodeNameAfterBinding (Beta, on by default since v1.35;
//     kube_features.go l.1412) the binding clears status.nominatedNodeName. New in v1.37: the
//     binding drops the legacy init-container annotations (pod.{alpha,beta}.kubernetes.io/
//     init-containers and init-container-statuses) from the merged annotations
//     (pkg/api/pod DropInitContainerAnnotations, storage.go l.258). With
//     PodTopologyLabelsAdmission (Beta, on by default since v1.35; l.2000) the binding copies
//     its labels onto the pod, and the default-on PodTopologyLabels admission plugin
//     (plugin/pkg/admission/podtopologylabels, admitBinding; unchanged from v1.35.4) has put
//     the target node's topology.kubernetes.io/zone and topology.kubernetes.io/region labels
//     on the Binding first. (Its admitPod half, for pods created with spec.nodeName, is not
//     mirrored: the scenario's bound pods are taken as stored.)
//   - status writes to a bound pod: with ClearingNominatedNodeNameAfterBinding,
//     ValidatePodStatusUpdate (pkg/apis/core/validation/validation.go l.6185-6191) forbids
//     setting a new non-empty status.nominatedNodeName on a pod that already has
//     spec.nodeName (apiValidator). The API server keeps a pod's status on a plain pod update,
//     so every write that changes the nomination is a status write.

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	clienttesting "k8s.io/client-go/testing"
	apipod "k8s.io/kubernetes/pkg/api/pod"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	"k8s.io/kubernetes/pkg/features"
)

var (
	podsGVR  = v1.SchemeGroupVersion.WithResource("pods")
	nodesGVR = v1.SchemeGroupVersion.WithResource("nodes")
)

// topologyLabels are the node labels the PodTopologyLabels admission plugin copies
// (podtopologylabels defaultConfig).
var topologyLabels = []string{"topology.kubernetes.io/zone", "topology.kubernetes.io/region"}

// bindingReactor handles "create pods/binding" by writing the bound pod through tracker.
func bindingReactor(tracker clienttesting.ObjectTracker) clienttesting.ReactionFunc {
	return func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "binding" {
			return false, nil, nil
		}
		binding, ok := action.(clienttesting.CreateAction).GetObject().(*v1.Binding)
		if !ok {
			return true, nil, apierrors.NewBadRequest("not a Binding object")
		}
		obj, err := tracker.Get(podsGVR, action.GetNamespace(), binding.Name)
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*v1.Pod).DeepCopy()
		binding = admitBinding(tracker, binding)
		if binding.UID != "" && binding.UID != pod.UID {
			return true, nil, apierrors.NewConflict(podsGVR.GroupResource(), binding.Name,
				fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", binding.UID, pod.UID))
		}
		if err := setPodNodeAndMetadata(pod, binding); err != nil {
			// assignPod: an error of the update function becomes a conflict on pods/binding.
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods/binding"}, binding.Name, err)
		}
		if err := tracker.Update(podsGVR, pod, pod.Namespace); err != nil {
			return true, nil, err
		}
		return true, binding, nil
	}
}

// setPodNodeAndMetadata is the update function of upstream's setPodNodeAndMetadata, on a v1.Pod
// (v1.37.2: storage.go, setPodNodeAndMetadata l.213, copyLabelsWithOverwriting l.275).
func setPodNodeAndMetadata(pod *v1.Pod, binding *v1.Binding) error {
	if pod.DeletionTimestamp != nil {
		return fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", pod.Name)
	}
	if pod.Spec.NodeName != "" {
		return fmt.Errorf("pod %v is already assigned to node %q", pod.Name, pod.Spec.NodeName)
	}
	if len(pod.Spec.SchedulingGates) != 0 {
		return fmt.Errorf("pod %v has non-empty .spec.schedulingGates", pod.Name)
	}
	pod.Spec.NodeName = binding.Target.Name
	if utilfeature.DefaultFeatureGate.Enabled(features.ClearingNominatedNodeNameAfterBinding) {
		pod.Status.NominatedNodeName = ""
	}
	if pod.Annotations == nil {
		pod.Annotations = make(map[string]string)
	}
	for k, v := range binding.Annotations {
		pod.Annotations[k] = v
	}
	// Binding writes bypass the pod strategy, so storage.go scrubs the merged annotations.
	apipod.DropInitContainerAnnotations(pod.Annotations)
	if utilfeature.DefaultFeatureGate.Enabled(features.PodTopologyLabelsAdmission) && len(binding.Labels) > 0 {
		if pod.Labels == nil {
			pod.Labels = make(map[string]string)
		}
		for k, v := range binding.Labels {
			pod.Labels[k] = v
		}
	}
	podutil.UpdatePodCondition(&pod.Status, &v1.PodCondition{
		Type:   v1.PodScheduled,
		Status: v1.ConditionTrue,
	})
	return nil
}

// admitBinding is the PodTopologyLabels admission plugin's admitBinding: the target node's
// topology labels are added to the Binding's labels (a missing node adds none).
func admitBinding(tracker clienttesting.ObjectTracker, binding *v1.Binding) *v1.Binding {
	if !utilfeature.DefaultFeatureGate.Enabled(features.PodTopologyLabelsAdmission) || binding.Target.Kind != "Node" {
		return binding
	}
	obj, err := tracker.Get(nodesGVR, "", binding.Target.Name)
	if err != nil {
		return binding
	}
	node := obj.(*v1.Node)
	binding = binding.DeepCopy()
	for _, key := range topologyLabels {
		if value, ok := node.Labels[key]; ok {
			if binding.Labels == nil {
				binding.Labels = map[string]string{}
			}
			binding.Labels[key] = value
		}
	}
	return binding
}

// apiValidator refuses, as ValidatePodStatusUpdate does with
// ClearingNominatedNodeNameAfterBinding on, a write that sets a new non-empty
// status.nominatedNodeName on a pod already bound to a node.
type apiValidator struct {
	clienttesting.ObjectTracker
}

func (t *apiValidator) check(gvr schema.GroupVersionResource, obj runtime.Object, ns string) error {
	if gvr != podsGVR || !utilfeature.DefaultFeatureGate.Enabled(features.ClearingNominatedNodeNameAfterBinding) {
		return nil
	}
	newPod, ok := obj.(*v1.Pod)
	if !ok {
		return nil
	}
	old, err := t.ObjectTracker.Get(gvr, ns, newPod.Name)
	if err != nil {
		return nil // the tracker reports it
	}
	oldPod := old.(*v1.Pod)
	if oldPod.Spec.NodeName != "" && newPod.Status.NominatedNodeName != "" &&
		newPod.Status.NominatedNodeName != oldPod.Status.NominatedNodeName {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, newPod.Name, field.ErrorList{
			field.Forbidden(field.NewPath("status", "nominatedNodeName"),
				"may not be set on pods that are already bound to a node")})
	}
	return nil
}

func (t *apiValidator) Update(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.UpdateOptions) error {
	if err := t.check(gvr, obj, ns); err != nil {
		return err
	}
	return t.ObjectTracker.Update(gvr, obj, ns, opts...)
}

func (t *apiValidator) Patch(gvr schema.GroupVersionResource, obj runtime.Object, ns string, opts ...metav1.PatchOptions) error {
	if err := t.check(gvr, obj, ns); err != nil {
		return err
	}
	return t.ObjectTracker.Patch(gvr, obj, ns, opts...)
}
