package main

// The pods/binding subresource of the fake API server, as the real one stores a binding:
// pkg/registry/core/pod/storage/storage.go (v1.34.2), BindingREST.Create, assignPod and
// setPodNodeAndMetadata.

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	clienttesting "k8s.io/client-go/testing"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
	"k8s.io/kubernetes/pkg/features"
)

var podsGVR = v1.SchemeGroupVersion.WithResource("pods")

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

// setPodNodeAndMetadata is the update function of upstream's setPodNodeAndMetadata, on a v1.Pod.
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
