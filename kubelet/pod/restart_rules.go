package pod

import (
	"slices"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// containerShouldRestart is Kubernetes' ContainerShouldRestart (1.34,
// ContainerRestartRules): whether a container of spec that exited with
// exitCode is restarted. A container with its own restartPolicy first
// has its restartPolicyRules tried in order (the first whose exitCodes
// match decides; Restart is the one action), then its own policy; one
// without uses the pod's. Sidecars (init containers with Always) are
// restarted while the pod runs by their own logic, not through this.
func containerShouldRestart(c *v1.Container, spec *v1.PodSpec, exitCode int) bool {
	if c.GetRestartPolicy() == "" {
		return shouldRestart(spec.GetRestartPolicy(), exitCode)
	}
	for _, r := range c.GetRestartPolicyRules() {
		if ruleMatches(r, exitCode) {
			return r.GetAction() == "Restart"
		}
	}
	return shouldRestart(c.GetRestartPolicy(), exitCode)
}

// ruleMatches reports whether a rule's exitCodes match exitCode (In: one
// of the values; NotIn: none of them). A rule without exitCodes matches
// nothing (validation requires them).
func ruleMatches(r *v1.ContainerRestartRule, exitCode int) bool {
	e := r.GetExitCodes()
	if e == nil {
		return false
	}
	in := slices.Contains(e.GetValues(), int32(exitCode))
	switch e.GetOperator() {
	case "In":
		return in
	case "NotIn":
		return !in
	}
	return false
}

// initShouldRestart is whether a regular init container that failed
// (exitCode non-zero) is run again: under the pod's policy Always or
// OnFailure unless its own policy or rules say otherwise.
func initShouldRestart(c *v1.Container, spec *v1.PodSpec, exitCode int) bool {
	return containerShouldRestart(c, spec, exitCode)
}
