package kubeapi

import (
	"net/http"
	"time"

	"github.com/tugboat/tugboat/api/table"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// table is a meta.k8s.io/v1 Table of objs, with the columns tugctl prints
// (package api/table), so kubectl and tugctl show the same. Each row
// carries its object as includeObject asks: PartialObjectMetadata (the
// default: kubectl reads labels and names from it), Object, or None.
func (h *Handler) table(r *http.Request, res *resource, objs []v1.Object, rev string) (map[string]any, error) {
	t := table.For(res.kind, objs, time.Now())
	include := r.URL.Query().Get("includeObject")
	rows := make([]map[string]any, 0, len(t.Rows))
	for _, row := range t.Rows {
		out := map[string]any{"cells": row.Cells}
		switch include {
		case "None":
		case "Object":
			m, err := encode(row.Object)
			if err != nil {
				return nil, err
			}
			out["object"] = m
		default:
			m, err := partialMetadata(row.Object)
			if err != nil {
				return nil, err
			}
			out["object"] = m
		}
		rows = append(rows, out)
	}
	return map[string]any{
		"kind": "Table", "apiVersion": "meta.k8s.io/v1",
		"metadata":          listMeta{ResourceVersion: rev},
		"columnDefinitions": t.Columns,
		"rows":              rows,
	}, nil
}
