// Command pod-requests prints upstream's resourcehelper.PodRequests
// (k8s.io/component-helpers/resource/helpers.go) for pods read from stdin, with the options
// kube-scheduler's calculateResource (pkg/scheduler/framework/types.go) passes for the pods
// it accounts on a node: UseStatusResources (InPlacePodVerticalScaling),
// InPlacePodLevelResourcesVerticalScalingEnabled (InPlacePodLevelResourcesVerticalScaling,
// component-helpers v0.35 on) and SkipPodLevelResources (PodLevelResources off), once as they
// are and once with the non-zero defaults (NonMissingContainerRequests: 100m cpu, 200Mi
// memory) that scoring uses.
//
// One module, built against each release's component-helpers by an alternate go.mod:
// go.mod is v0.37.2 (Kubernetes v1.37.2), go.v1.34.mod v0.34.2, go.v1.35.mod v0.35.4,
// go.v1.36.mod v0.36.3 (tests/oracle/test_pod_requests_differential.py builds them).
//
// Input: one JSON object a line, {"id", "pod", "useStatus", "podLevelStatus",
// "skipPodLevel"}. Output: one a line, {"id", "requests", "nonZero"} (each resource as its
// exact decimal and its scheduler units: MilliValue for cpu, Value otherwise) or {"id",
// "error"}.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"reflect"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

type request struct {
	ID             string `json:"id"`
	Pod            v1.Pod `json:"pod"`
	UseStatus      bool   `json:"useStatus"`
	PodLevelStatus bool   `json:"podLevelStatus"`
	SkipPodLevel   bool   `json:"skipPodLevel"`
}

type amount struct {
	Dec   string `json:"dec"`
	Units int64  `json:"units"`
}

type answer struct {
	ID       string            `json:"id"`
	Requests map[string]amount `json:"requests,omitempty"`
	NonZero  map[string]amount `json:"nonZero,omitempty"`
	Error    string            `json:"error,omitempty"`
}

// podLevelStatusField names the option component-helpers v0.35.4 added; v0.34.2 lacks it.
const podLevelStatusField = "InPlacePodLevelResourcesVerticalScalingEnabled"

func options(req *request) (resourcehelper.PodResourcesOptions, error) {
	opts := resourcehelper.PodResourcesOptions{
		UseStatusResources:    req.UseStatus,
		SkipPodLevelResources: req.SkipPodLevel,
	}
	field := reflect.ValueOf(&opts).Elem().FieldByName(podLevelStatusField)
	if field.IsValid() {
		field.SetBool(req.PodLevelStatus)
	} else if req.PodLevelStatus {
		return opts, fmt.Errorf("this component-helpers has no %s", podLevelStatusField)
	}
	return opts, nil
}

func amounts(list v1.ResourceList) map[string]amount {
	out := make(map[string]amount, len(list))
	for name, quantity := range list {
		units := quantity.Value()
		if name == v1.ResourceCPU {
			units = quantity.MilliValue()
		}
		out[string(name)] = amount{Dec: quantity.AsDec().String(), Units: units}
	}
	return out
}

func main() {
	scanner := bufio.NewScanner(os.Stdin)
	scanner.Buffer(make([]byte, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	encoder := json.NewEncoder(out)
	for scanner.Scan() {
		if len(scanner.Bytes()) == 0 {
			continue
		}
		var req request
		if err := json.Unmarshal(scanner.Bytes(), &req); err != nil {
			_ = encoder.Encode(answer{ID: req.ID, Error: err.Error()})
			continue
		}
		opts, err := options(&req)
		if err != nil {
			_ = encoder.Encode(answer{ID: req.ID, Error: err.Error()})
			continue
		}
		requests := resourcehelper.PodRequests(&req.Pod, opts)
		opts.NonMissingContainerRequests = v1.ResourceList{
			v1.ResourceCPU:    *resource.NewMilliQuantity(100, resource.DecimalSI),
			v1.ResourceMemory: *resource.NewQuantity(200*1024*1024, resource.DecimalSI),
		}
		nonZero := resourcehelper.PodRequests(&req.Pod, opts)
		_ = encoder.Encode(answer{ID: req.ID, Requests: amounts(requests), NonZero: amounts(nonZero)})
	}
	if err := scanner.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
