package basic

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/tugboat/tugboat/api/componentstatus"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/cli"
	"github.com/tugboat/tugboat/cmd/tugctl/internal/printers"
)

// ComponentStatus is no stored kind: the apiserver computes it on each
// call (Cluster.Status, package api/componentstatus), so get serves it
// apart from the kinds, as kubectl get cs reads it: NAME, STATUS
// (Healthy/Unhealthy), MESSAGE, ERROR, or the ComponentStatus(List) as
// YAML or JSON.

// componentStatusArgs reports whether args name componentstatuses (cs,
// componentstatus, componentstatuses; or TYPE/NAME of it) and the names.
func componentStatusArgs(args []string) (names []string, ok bool) {
	isCS := func(s string) bool {
		switch strings.ToLower(s) {
		case "cs", "componentstatus", "componentstatuses":
			return true
		}
		return false
	}
	if len(args) == 0 {
		return nil, false
	}
	if kind, name, found := strings.Cut(args[0], "/"); found {
		if !isCS(kind) {
			return nil, false
		}
		names = append(names, name)
		for _, a := range args[1:] {
			kind, name, found := strings.Cut(a, "/")
			if !found || !isCS(kind) {
				return nil, false
			}
			names = append(names, name)
		}
		return names, true
	}
	if !isCS(args[0]) {
		return nil, false
	}
	return args[1:], true
}

func runGetComponentStatuses(ctx context.Context, o *cli.Options, names []string, f *getFlags) (err error) {
	output, err := printers.ParseOutput(f.output)
	if err != nil {
		return err
	}
	switch {
	case f.watch:
		return fmt.Errorf("--watch: componentstatuses are computed on each request and cannot be watched")
	case f.selector != "" || f.fieldSelector != "":
		return fmt.Errorf("--selector/--field-selector: componentstatuses have no labels or fields to select by")
	case !output.IsTable() && output.Format != printers.YAML && output.Format != printers.JSON:
		return fmt.Errorf("--output %s: componentstatuses print as a table, yaml or json", f.output)
	}
	st, err := o.ClusterStatus(ctx)
	if err != nil {
		return err
	}
	items := componentstatus.Items(st)
	if len(names) > 0 {
		byName := map[string]componentstatus.Item{}
		for _, it := range items {
			byName[it.Name()] = it
		}
		var picked []componentstatus.Item
		var missing []string
		for _, n := range names {
			if it, ok := byName[n]; ok {
				picked = append(picked, it)
			} else {
				missing = append(missing, n)
			}
		}
		for _, n := range missing {
			fmt.Fprintf(o.ErrOut, "Error from server (NotFound): componentstatuses %q not found\n", n)
		}
		items = picked
		defer func() {
			if len(missing) > 0 && err == nil {
				err = cli.ErrReported
			}
		}()
	}
	if output.Format == printers.YAML || output.Format == printers.JSON {
		var doc any = map[string]any{"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": map[string]any{}, "items": items}
		if len(names) == 1 && len(items) == 1 {
			doc = items[0]
		}
		var b []byte
		if output.Format == printers.JSON {
			b, err = json.MarshalIndent(doc, "", "    ")
			b = append(b, '\n')
		} else {
			b, err = yaml.Marshal(doc)
		}
		if err != nil {
			return err
		}
		_, err = o.Out.Write(b)
		return err
	}
	var a printers.Aligner
	rows := [][]string{}
	if !f.noHeaders {
		rows = append(rows, []string{"NAME", "STATUS", "MESSAGE", "ERROR"})
	}
	for _, it := range items {
		c := it.Conditions[0]
		rows = append(rows, []string{it.Name(), it.StatusText(), c.Message, c.Error})
	}
	for _, r := range rows {
		a.Fit(r)
	}
	for _, r := range rows {
		a.WriteRow(o.Out, r)
	}
	return nil
}
