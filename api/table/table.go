// Package table is the table of every kind: the columns `tugctl get` prints
// (Kubernetes' own: pods NAME READY STATUS RESTARTS AGE, -o wide adds IP
// NODE, ...) and the cells an object fills them with. It is a value, shaped
// like Kubernetes' meta.k8s.io/v1 Table (column definitions with name, type,
// format, description and priority; rows of cells), so that the CLI renders
// it as text and an HTTP door can serve it to kubectl as server-side
// printing: both then print the same.
//
// The tables are organised by API group, one file each (core.go, apps.go,
// coordination.go, ...): a new kind adds its columns and its cells function
// to its group's map, and byKind picks them up. A kind without a table gets
// NAME AGE. Cells are strings, or int64 for the columns of type "integer".
// Ages and times are relative to the now given, so a table is a pure
// function of the objects and the clock.
//
// Contract: the package reads objects and never changes them; it imports
// only the API (api/v1, api/kinds, api/labels), never a component or the
// CLI, so the apiserver and tugctl can both use it.
package table

import (
	"time"

	"github.com/tugboat/tugboat/api/kinds"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// Column is a column definition, as metav1.TableColumnDefinition.
type Column struct {
	// Name is the column's title as Kubernetes writes it ("Name",
	// "Cluster-IP", "Last Seen"); the CLI prints it in upper case.
	Name string `json:"name"`
	// Type is the OpenAPI type of the cells: "string" or "integer".
	Type string `json:"type"`
	// Format is "name" for the column that holds the object's name, else "".
	Format string `json:"format"`
	// Description says what the column shows.
	Description string `json:"description"`
	// Priority is 0 for the columns always shown, 1 for those only shown
	// with -o wide.
	Priority int32 `json:"priority"`
}

// Row is one object's cells, one per column, as metav1.TableRow.
type Row struct {
	// Cells are string, or int64 for an "integer" column.
	Cells []any `json:"cells"`
	// Object is the object the row shows.
	Object v1.Object `json:"-"`
}

// Table is the columns of one kind and a row per object.
type Table struct {
	Columns []Column `json:"columnDefinitions"`
	Rows    []Row    `json:"rows"`
}

// def is one kind's table: its columns and how an object fills them.
type def struct {
	columns []Column
	cells   func(obj v1.Object, now time.Time) []any
}

// kindDef types a kind's cells function.
func kindDef[T v1.Object](columns []Column, cells func(T, time.Time) []any) def {
	return def{columns: columns, cells: func(o v1.Object, now time.Time) []any { return cells(o.(T), now) }}
}

// byKind is every kind's table, by Kind name, from the API group files.
var byKind = merge(core, coreVolumes, corePolicy, apps, autoscaling, batch, coordination, discovery, networking, policy, resource, scheduling, storage)

func merge(groups ...map[string]def) map[string]def {
	out := map[string]def{}
	for _, g := range groups {
		for k, d := range g {
			out[k] = d
		}
	}
	return out
}

// generic is the table of kinds without their own: NAME AGE.
var generic = def{
	columns: []Column{nameColumn, ageColumn},
	cells: func(o v1.Object, now time.Time) []any {
		return []any{o.GetMetadata().GetName(), Age(o.GetMetadata().GetCreationTimestamp(), now)}
	},
}

func defFor(k *kinds.Kind) def {
	if d, ok := byKind[k.Name]; ok {
		return d
	}
	return generic
}

// Columns returns the column definitions of kind k.
func Columns(k *kinds.Kind) []Column {
	return append([]Column(nil), defFor(k).columns...)
}

// RowOf is obj's row in the table of its kind k; ages are relative to now.
func RowOf(k *kinds.Kind, obj v1.Object, now time.Time) Row {
	return Row{Cells: defFor(k).cells(obj, now), Object: obj}
}

// For is the table of objs, all of kind k, in their order.
func For(k *kinds.Kind, objs []v1.Object, now time.Time) *Table {
	t := &Table{Columns: Columns(k), Rows: make([]Row, 0, len(objs))}
	for _, o := range objs {
		t.Rows = append(t.Rows, RowOf(k, o, now))
	}
	return t
}

// The columns most tables share.
var (
	nameColumn = Column{Name: "Name", Type: "string", Format: "name", Description: "The object's name, unique among the objects of its kind in its namespace."}
	ageColumn  = Column{Name: "Age", Type: "string", Description: "Time since the object was created (its creationTimestamp)."}
)
