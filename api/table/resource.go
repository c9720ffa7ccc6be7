package table

import (
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// resource is the tables of the resource.k8s.io group, kubectl's columns.
var resource = map[string]def{
	"DeviceClass": kindDef(deviceClassColumns, deviceClassCells),
}

var deviceClassColumns = []Column{nameColumn, ageColumn}

func deviceClassCells(c *v1.DeviceClass, now time.Time) []any {
	return []any{c.Metadata.GetName(), Age(c.Metadata.GetCreationTimestamp(), now)}
}
