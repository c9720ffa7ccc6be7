package cluster

// CrictlPods is what `crictl pods -o json` prints, as far as the tests
// read it.
type CrictlPods struct {
	Items []struct {
		ID       string `json:"id"`
		State    string `json:"state"`
		Metadata struct {
			Name, Namespace, UID string
			Attempt              int
		} `json:"metadata"`
		Labels map[string]string `json:"labels"`
	} `json:"items"`
}

// CrictlContainers is what `crictl ps -o json` prints, as far as the
// tests read it.
type CrictlContainers struct {
	Containers []struct {
		ID       string            `json:"id"`
		State    string            `json:"state"`
		Labels   map[string]string `json:"labels"`
		Metadata struct{ Name string }
	} `json:"containers"`
}
