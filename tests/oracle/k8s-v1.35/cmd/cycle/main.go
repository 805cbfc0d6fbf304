// Command cycle runs ONE upstream kube-scheduler v1.35 scheduling cycle per scenario and
// reports every node's verdict, the scores, the node upstream would select, the FitError
// message and DefaultPreemption's PostFilter outcome, for kaudit's differential tests.
//
// Input: JSON lines on stdin, each
//
//	{"id": str, "objects": [Kubernetes objects], "pod": {the incoming pod}, "config": yaml|null}
//
// Output: one JSON line per input line, {"id": ..., "expect": {...}} or {"id": ..., "error": "..."}.
//
// "expect" has the shape of kaudit's shared upstream expectations (nodes, maxNodes, maxScore,
// message, nominatedNode, postFilterCode, preemption) plus fields of its own:
//
//   - preFilter: {"plugin", "code", "reasons"} when a PreFilter plugin rejected the pod, or
//     {"nodes", "plugins"} (sorted) when PreFilter results kept only those nodes;
//   - nominatedNodeFits: the pod's status.nominatedNodeName when that node passes the filters
//     (upstream then takes it without looking at other nodes; maxNodes is that node);
//   - selectedNode: the node schedulePod would return, or null when no node fits. It is
//     nominatedNodeFits when set; otherwise upstream's own choice among the scored feasible
//     nodes, the root of schedule_one.go's nodeScoreHeap (newSortedNodeScores + Pop: heap.Init
//     and heap.Pop over the scores in the feasible nodes' order, selectHost below), as if the
//     nodes were filtered in the snapshot's order from index 0 with parallelism 1. v1.35 has
//     no random tie-break without extenders (every Randomizer is 0), so this is deterministic;
//     with a single feasible node it is that node.
//
// The cycle follows upstream's pkg/scheduler/schedule_one.go (v1.35.4: schedulingCycle,
// schedulePod, findNodesThatFitPod, evaluateNominatedNode, findNodesThatPassFilters,
// prioritizeNodes, newSortedNodeScores) with deliberate differences that make the oracle
// report everything: every node is filtered (no percentageOfNodesToScore sampling, and
// sequentially in the snapshot's order where upstream's parallel filter workers append
// feasible nodes in a racy order starting at nextStartNodeIndex), every feasible node is
// scored, even a single one or when the nominated node fits, and no OpportunisticBatching
// node hint is asked for (a fresh scheduler has no previous cycle's results to hint from, so
// upstream's GetNodeHint would return none). The framework, plugins, snapshot, nominator,
// FitError text and PostFilter are upstream's.
package main

import (
	"bufio"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	plfeature "k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"

	"kaudit.test/oracle/v1_35/internal/oracle"
)

type request struct {
	ID      string            `json:"id"`
	Objects []json.RawMessage `json:"objects"`
	Pod     json.RawMessage   `json:"pod"`
	Config  *string           `json:"config"`
	// FeatureGates turns gates on or off for this scenario alone (--feature-gates).
	FeatureGates map[string]bool `json:"featureGates,omitempty"`
}

type nodeResult struct {
	Feasible bool             `json:"feasible"`
	Plugin   string           `json:"plugin,omitempty"`
	Code     string           `json:"code,omitempty"`
	Reasons  []string         `json:"reasons,omitempty"`
	Scores   map[string]int64 `json:"scores,omitempty"`
	Total    *int64           `json:"total,omitempty"`
}

type candidateResult struct {
	Victims          []string `json:"victims"`
	NumPDBViolations int64    `json:"numPDBViolations"`
}

type preemptionResult struct {
	Eligible         bool                       `json:"eligible"`
	NominatedNode    *string                    `json:"nominatedNode"`
	Victims          []string                   `json:"victims"`
	NumPDBViolations *int64                     `json:"numPDBViolations"`
	Candidates       map[string]candidateResult `json:"candidates"`
	TiedNodes        []string                   `json:"tiedNodes"`
}

type preFilterResult struct {
	// A rejection: the plugin, code and reasons of PreFilter's status.
	Plugin  string   `json:"plugin,omitempty"`
	Code    string   `json:"code,omitempty"`
	Reasons []string `json:"reasons,omitempty"`
	// A restriction: the nodes PreFilter kept and the plugins that restricted them.
	Nodes   []string `json:"nodes,omitempty"`
	Plugins []string `json:"plugins,omitempty"`
}

type expect struct {
	Nodes             map[string]*nodeResult `json:"nodes"`
	PreFilter         *preFilterResult       `json:"preFilter,omitempty"`
	NominatedNodeFits *string                `json:"nominatedNodeFits,omitempty"`
	MaxNodes          []string               `json:"maxNodes"`
	MaxScore          *int64                 `json:"maxScore,omitempty"`
	SelectedNode      *string                `json:"selectedNode"`
	Message           *string                `json:"message"`
	NominatedNode     *string                `json:"nominatedNode,omitempty"`
	PostFilterCode    *string                `json:"postFilterCode,omitempty"`
	Preemption        *preemptionResult      `json:"preemption,omitempty"`
	PreemptionError   *string                `json:"preemptionError,omitempty"`
}

type response struct {
	ID     string  `json:"id"`
	Expect *expect `json:"expect,omitempty"`
	Error  string  `json:"error,omitempty"`
}

func main() {
	oracle.Quiet()
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	dec := json.NewDecoder(in)
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return
			}
			_ = enc.Encode(response{Error: "reading the request: " + err.Error()})
			return
		}
		exp, err := runScenario(req)
		resp := response{ID: req.ID, Expect: exp}
		if err != nil {
			resp = response{ID: req.ID, Error: err.Error()}
		}
		if err := enc.Encode(resp); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		out.Flush()
	}
}

func runScenario(req request) (result *expect, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ctx = klog.NewContext(ctx, klog.Background())

	if len(req.FeatureGates) > 0 {
		restore, err := setGates(req.FeatureGates)
		if err != nil {
			return nil, err
		}
		defer restore()
	}
	objects, err := oracle.DecodeObjects(req.Objects)
	if err != nil {
		return nil, err
	}
	pod, err := oracle.DecodePod(req.Pod)
	if err != nil {
		return nil, fmt.Errorf("pod: %w", err)
	}
	pod.Spec.NodeName = ""
	// The incoming pod is an object of the cluster too (DefaultPreemption reads it back
	// through the pod lister), unless the objects already hold it.
	found := false
	for _, o := range objects {
		if p, ok := o.(*v1.Pod); ok && p.Namespace == pod.Namespace && p.Name == pod.Name {
			found = true
		}
	}
	if !found {
		objects = append(objects, pod)
	}
	cfg, err := oracle.LoadConfig(req.Config)
	if err != nil {
		return nil, err
	}
	cluster, err := oracle.NewCluster(ctx, objects, cfg, nil)
	if err != nil {
		return nil, err
	}
	if err := cluster.Start(ctx); err != nil {
		return nil, err
	}
	return cycle(ctx, cluster, pod)
}

// setGates sets the process's feature gates for one scenario; the returned function sets
// them back.
func setGates(gates map[string]bool) (func(), error) {
	before := make(map[string]bool, len(gates))
	for name := range gates {
		before[name] = utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature(name))
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(gates); err != nil {
		return nil, err
	}
	return func() { _ = utilfeature.DefaultMutableFeatureGate.SetFromMap(before) }, nil
}

func cycle(ctx context.Context, cluster *oracle.Cluster, pod *v1.Pod) (*expect, error) {
	logger := klog.FromContext(ctx)
	sched := cluster.Scheduler
	schedFwk, ok := sched.Profiles[pod.Spec.SchedulerName]
	if !ok {
		return nil, fmt.Errorf("profile not found for scheduler name %q", pod.Spec.SchedulerName)
	}
	snapshot, ok := schedFwk.SnapshotSharedLister().(*internalcache.Snapshot)
	if !ok {
		return nil, fmt.Errorf("unexpected snapshot type %T", schedFwk.SnapshotSharedLister())
	}
	if err := sched.Cache.UpdateSnapshot(logger, snapshot); err != nil {
		return nil, err
	}
	if snapshot.NumNodes() == 0 {
		return nil, fmt.Errorf("no nodes available to schedule pods")
	}
	allNodes, err := snapshot.NodeInfos().List()
	if err != nil {
		return nil, err
	}

	// ScheduleOne's cycle state.
	state := framework.NewCycleState()
	state.SetRecordPluginMetrics(false)
	state.Write(framework.PodsToActivateKey, framework.NewPodsToActivate())

	exp := &expect{Nodes: map[string]*nodeResult{}, MaxNodes: []string{}}
	diagnosis := framework.Diagnosis{NodeToStatus: framework.NewDefaultNodeToStatus()}
	setFailed := func(name string, s *fwk.Status) {
		exp.Nodes[name] = &nodeResult{Plugin: s.Plugin(), Code: s.Code().String(), Reasons: nonNil(s.Reasons())}
	}

	// findNodesThatFitPod: PreFilter.
	preRes, s, unschedulablePlugins := schedFwk.RunPreFilterPlugins(ctx, state, pod)
	diagnosis.UnschedulablePlugins = unschedulablePlugins
	var feasible []fwk.NodeInfo
	if !s.IsSuccess() {
		if !s.IsRejected() {
			return nil, s.AsError()
		}
		diagnosis.NodeToStatus.SetAbsentNodesStatus(s)
		diagnosis.PreFilterMsg = s.Message()
		diagnosis.AddPluginStatus(s)
		exp.PreFilter = &preFilterResult{Plugin: s.Plugin(), Code: s.Code().String(), Reasons: nonNil(s.Reasons())}
		for _, n := range allNodes {
			setFailed(n.Node().Name, s)
		}
	} else {
		nodes := allNodes
		if !preRes.AllNodes() {
			nodes = nil
			kept := []string{}
			for name := range preRes.NodeNames {
				if ni, err := snapshot.Get(name); err == nil {
					nodes = append(nodes, ni)
					kept = append(kept, name)
				}
			}
			sort.Strings(kept)
			absent := fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
				fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", sets.List(unschedulablePlugins)))
			diagnosis.NodeToStatus.SetAbsentNodesStatus(absent)
			exp.PreFilter = &preFilterResult{Nodes: kept, Plugins: sets.List(unschedulablePlugins)}
			keptSet := sets.New(kept...)
			for _, n := range allNodes {
				if !keptSet.Has(n.Node().Name) {
					exp.Nodes[n.Node().Name] = &nodeResult{Plugin: "<PreFilterResult>", Code: absent.Code().String(),
						Reasons: absent.Reasons()}
				}
			}
		}
		// findNodesThatPassFilters over every node, in the snapshot's order.
		for _, ni := range nodes {
			st := schedFwk.RunFilterPluginsWithNominatedPods(ctx, state, pod, ni)
			if st.Code() == fwk.Error {
				return nil, st.AsError()
			}
			if st.IsSuccess() {
				feasible = append(feasible, ni)
				continue
			}
			diagnosis.NodeToStatus.Set(ni.Node().Name, st)
			diagnosis.AddPluginStatus(st)
			setFailed(ni.Node().Name, st)
		}
		// evaluateNominatedNode: a pod whose nominated node passes the filters goes there
		// without scoring.
		if nnn := pod.Status.NominatedNodeName; nnn != "" {
			for _, ni := range feasible {
				if ni.Node().Name == nnn {
					name := nnn
					exp.NominatedNodeFits = &name
				}
			}
		}
	}

	if len(feasible) > 0 {
		if err := score(ctx, schedFwk, state, pod, feasible, exp); err != nil {
			return nil, err
		}
		if exp.NominatedNodeFits != nil {
			exp.MaxNodes = []string{*exp.NominatedNodeFits}
			exp.MaxScore = exp.Nodes[*exp.NominatedNodeFits].Total
			// evaluateNominatedNode returned the nominated node alone: schedulePod's
			// len(feasibleNodes) == 1 branch takes it.
			exp.SelectedNode = exp.NominatedNodeFits
		}
		return exp, nil
	}

	// schedulingCycle: the FitError and PostFilter.
	fitErr := &framework.FitError{Pod: pod, NumAllNodes: snapshot.NumNodes(), Diagnosis: diagnosis}
	if !schedFwk.HasPostFilterPlugins() {
		msg := fitErr.Error()
		exp.Message = &msg
		return exp, nil
	}
	pre, err := preemptionDetail(ctx, cluster, schedFwk, state, pod, snapshot, diagnosis.NodeToStatus)
	if err != nil {
		// The dry run failed (a filter's Error on a candidate node): PostFilter below
		// fails the same way; say why there is no detail.
		detailErr := err.Error()
		exp.PreemptionError = &detailErr
		pre = nil
	}
	res, status := schedFwk.RunPostFilterPlugins(ctx, state, pod, diagnosis.NodeToStatus)
	fitErr.Diagnosis.PostFilterMsg = status.Message()
	msg := fitErr.Error()
	exp.Message = &msg
	code := status.Code().String()
	exp.PostFilterCode = &code
	nominated := ""
	if res != nil && res.NominatingInfo != nil {
		nominated = res.NominatedNodeName
	}
	if nominated != "" {
		exp.NominatedNode = &nominated
	}
	if pre != nil && !preemptionRan(schedFwk, status, nominated) {
		pre = nil
	}
	if pre != nil {
		if nominated != "" {
			pre.NominatedNode = &nominated
			if c, ok := pre.Candidates[nominated]; ok {
				pre.Victims = c.Victims
				n := c.NumPDBViolations
				pre.NumPDBViolations = &n
			}
		}
		exp.Preemption = pre
	}
	return exp, nil
}

// score runs prioritizeNodes' PreScore, Score (with NormalizeScore and weights) on the
// feasible nodes and records every plugin's weighted score and the totals.
func score(ctx context.Context, schedFwk framework.Framework, state fwk.CycleState, pod *v1.Pod,
	feasible []fwk.NodeInfo, exp *expect) error {
	var scores []fwk.NodePluginScores
	if !schedFwk.HasScorePlugins() {
		for _, ni := range feasible {
			scores = append(scores, fwk.NodePluginScores{Name: ni.Node().Name, TotalScore: 1})
		}
	} else {
		if st := schedFwk.RunPreScorePlugins(ctx, state, pod, feasible); !st.IsSuccess() {
			return st.AsError()
		}
		var st *fwk.Status
		scores, st = schedFwk.RunScorePlugins(ctx, state, pod, feasible)
		if !st.IsSuccess() {
			return st.AsError()
		}
	}
	best := int64(math.MinInt64)
	for _, ns := range scores {
		m := map[string]int64{}
		for _, ps := range ns.Scores {
			m[ps.Name] = ps.Score
		}
		total := ns.TotalScore
		exp.Nodes[ns.Name] = &nodeResult{Feasible: true, Scores: m, Total: &total}
		if total > best {
			best = total
			exp.MaxNodes = nil
		}
		if total == best {
			exp.MaxNodes = append(exp.MaxNodes, ns.Name)
		}
	}
	sort.Strings(exp.MaxNodes)
	exp.MaxScore = &best
	selected := selectHost(scores)
	exp.SelectedNode = &selected
	return nil
}

// selectHost is schedulePod's choice among the scored feasible nodes
// (pkg/scheduler/schedule_one.go, schedulePod: "sortedPrioritizedNodes :=
// newSortedNodeScores(priorityList); node := sortedPrioritizedNodes.Pop()"). Upstream's
// sortedNodeScores is unexported, so this is its newSortedNodeScores (heap.Init over the
// nodesScores slice, which RunScorePlugins returns in the feasible nodes' order) and Pop
// (heap.Pop), with nodeScoreHeap's Less, Swap, Push and Pop copied from schedule_one.go
// (type nodeScoreHeap, v1.35.4 l.930-952; schedulePod l.465-466). No extenders run here, so every Randomizer is 0 and
// ties go to whatever Go's container/heap leaves at the root (with all nodes tied: the first
// feasible node). The heap runs over a copy: the scores stay in feasible order.
// With one feasible node upstream skips scoring and takes it (len(feasibleNodes) == 1); the
// heap of one gives the same node.
func selectHost(scores []fwk.NodePluginScores) string {
	h := make(nodeScoreHeap, len(scores))
	copy(h, scores)
	heap.Init(&h)
	return heap.Pop(&h).(fwk.NodePluginScores).Name
}

// nodeScoreHeap is upstream's (schedule_one.go): a max-heap by TotalScore, then Randomizer.
type nodeScoreHeap []fwk.NodePluginScores

var _ heap.Interface = &nodeScoreHeap{}

func (h nodeScoreHeap) Len() int { return len(h) }
func (h nodeScoreHeap) Less(i, j int) bool {
	return (h[i].TotalScore > h[j].TotalScore ||
		(h[i].TotalScore == h[j].TotalScore && h[i].Randomizer > h[j].Randomizer))
}
func (h nodeScoreHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

func (h *nodeScoreHeap) Push(x interface{}) {
	*h = append(*h, x.(fwk.NodePluginScores))
}

func (h *nodeScoreHeap) Pop() interface{} {
	old := *h
	n := len(old)
	x := old[n-1]
	*h = old[0 : n-1]
	return x
}

// preemptionDetail evaluates DefaultPreemption on every potential node (offset 0, all nodes
// as candidates: upstream's DryRunPreemption with its own SelectVictimsOnNode) and narrows the
// candidates with pickOneNodeForPreemption's criteria. It runs before the real PostFilter,
// whose asynchronous preemption deletes the victims.
func preemptionDetail(ctx context.Context, cluster *oracle.Cluster, schedFwk framework.Framework, state fwk.CycleState,
	pod *v1.Pod, snapshot *internalcache.Snapshot, m *framework.NodeToStatus) (*preemptionResult, error) {
	enabled := false
	for _, p := range schedFwk.ListPlugins().PostFilter.Enabled {
		if p.Name == defaultpreemption.Name {
			enabled = true
		}
	}
	if !enabled {
		return nil, nil
	}
	args, err := preemptionArgs(cluster.Config, schedFwk.ProfileName())
	if err != nil {
		return nil, err
	}
	fts := plfeature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate)
	fts.EnableAsyncPreemption = false
	pl, err := defaultpreemption.New(ctx, args, schedFwk, fts)
	if err != nil {
		return nil, err
	}
	res := &preemptionResult{Victims: []string{}, Candidates: map[string]candidateResult{}, TiedNodes: []string{}}
	current, err := pl.Evaluator.PodLister.Pods(pod.Namespace).Get(pod.Name)
	if err != nil {
		return nil, err
	}
	res.Eligible, _ = pl.PodEligibleToPreemptOthers(ctx, current, m.Get(current.Status.NominatedNodeName))
	if !res.Eligible {
		return res, nil
	}
	potential, err := m.NodesForStatusCode(snapshot.NodeInfos(), fwk.Unschedulable)
	if err != nil {
		return nil, err
	}
	if len(potential) == 0 {
		return res, nil
	}
	pdbs, err := pl.Evaluator.PdbLister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	candidates, _, err := pl.Evaluator.DryRunPreemption(ctx, state, current, potential, pdbs, 0, int32(len(potential)))
	if err != nil && len(candidates) == 0 {
		return nil, err
	}
	for _, c := range candidates {
		names := []string{}
		for _, v := range c.Victims().Pods {
			names = append(names, oracle.PodKey(v))
		}
		res.Candidates[c.Name()] = candidateResult{Victims: names, NumPDBViolations: c.Victims().NumPDBViolations}
	}
	victimsMap := pl.CandidatesToVictimsMap(candidates)
	res.TiedNodes = tiedNodes(victimsMap, pl.OrderedScoreFuncs(ctx, victimsMap))
	return res, nil
}

// preemptionRan tells whether RunPostFilterPlugins reached DefaultPreemption: it returns at
// the first plugin that succeeds, errs or says UnschedulableAndUnresolvable (e.g.
// DynamicResources' PostFilter errs when a PreFilter plugin before it rejected the pod, as its
// cycle state was never written).
func preemptionRan(schedFwk framework.Framework, status *fwk.Status, nominated string) bool {
	switch status.Code() {
	case fwk.Success:
		return nominated != "" // DefaultPreemption succeeds only with a nominated node
	case fwk.Error, fwk.UnschedulableAndUnresolvable:
		if status.Plugin() == defaultpreemption.Name {
			return true
		}
		for _, p := range schedFwk.ListPlugins().PostFilter.Enabled {
			switch p.Name {
			case defaultpreemption.Name:
				return true // the status came from a plugin after it
			case status.Plugin():
				return false
			}
		}
	}
	return true
}

// preemptionArgs returns the profile's DefaultPreemptionArgs (defaulted when absent).
func preemptionArgs(cfg *schedconfig.KubeSchedulerConfiguration, profileName string) (runtime.Object, error) {
	for _, p := range cfg.Profiles {
		if p.SchedulerName != profileName {
			continue
		}
		for _, pc := range p.PluginConfig {
			if pc.Name == defaultpreemption.Name {
				return pc.Args, nil
			}
		}
	}
	versioned := &configv1.DefaultPreemptionArgs{}
	scheme.Scheme.Default(versioned)
	args := &schedconfig.DefaultPreemptionArgs{}
	if err := scheme.Scheme.Convert(versioned, args, nil); err != nil {
		return nil, err
	}
	return args, nil
}

// tiedNodes applies the node-selection criteria of upstream's pickOneNodeForPreemption
// (framework/preemption/preemption.go) and returns, sorted, every candidate still tied after
// the last one (upstream then takes an arbitrary one of them). Upstream's last criterion
// reads a victim without a start time as starting time.Now(), afresh for each candidate in
// the (random) order it visits them, so candidates whose earliest victims have none are
// tied: here they all read one instant.
func tiedNodes(victims map[string]*extenderv1.Victims, scoreFuncs []func(string) int64) []string {
	now := time.Now()
	all := make([]string, 0, len(victims))
	for n := range victims {
		all = append(all, n)
	}
	sort.Strings(all)
	if len(all) == 0 {
		return []string{}
	}
	if len(scoreFuncs) == 0 {
		scoreFuncs = []func(string) int64{
			func(n string) int64 { return -victims[n].NumPDBViolations },
			func(n string) int64 { return -int64(corev1.PodPriority(victims[n].Pods[0])) },
			func(n string) int64 {
				var sum int64
				for _, p := range victims[n].Pods {
					sum += int64(corev1.PodPriority(p)) + int64(math.MaxInt32+1)
				}
				return -sum
			},
			func(n string) int64 { return -int64(len(victims[n].Pods)) },
			func(n string) int64 { return earliestStart(victims[n].Pods, now) },
		}
	}
	for _, f := range scoreFuncs {
		var selected []string
		best := int64(math.MinInt64)
		for _, n := range all {
			s := f(n)
			if s > best {
				best = s
				selected = nil
			}
			if s == best {
				selected = append(selected, n)
			}
		}
		all = selected
		if len(all) == 1 {
			break
		}
	}
	return all
}

// earliestStart is util.GetEarliestPodStartTime's answer in Unix nanoseconds, a pod without a
// start time read as starting at now.
func earliestStart(pods []*v1.Pod, now time.Time) int64 {
	if len(pods) == 0 {
		return math.MinInt64
	}
	start := func(p *v1.Pod) time.Time {
		if p.Status.StartTime != nil {
			return p.Status.StartTime.Time
		}
		return now
	}
	earliest, top := start(pods[0]), corev1.PodPriority(pods[0])
	for _, p := range pods {
		if priority := corev1.PodPriority(p); priority == top {
			if s := start(p); s.Before(earliest) {
				earliest = s
			}
		} else if priority > top {
			top, earliest = priority, start(p)
		}
	}
	return earliest.UnixNano()
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
