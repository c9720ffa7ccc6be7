package v1

// ToleratesTaint is Kubernetes' toleration match: an empty effect matches
// every effect, an empty key with Exists matches every taint, Equal (the
// default) compares values.
func (t *Toleration) ToleratesTaint(taint *Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case "", "Equal":
		return t.Value == taint.Value
	case "Exists":
		return true
	}
	return false
}

// TolerationsTolerate reports whether any of tols tolerates taint.
func TolerationsTolerate(tols []*Toleration, taint *Taint) bool {
	for _, t := range tols {
		if t.ToleratesTaint(taint) {
			return true
		}
	}
	return false
}
