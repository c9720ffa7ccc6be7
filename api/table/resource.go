package table

import (
	"strings"
	"time"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// resource is the tables of the resource.k8s.io group, kubectl's columns.
var resource = map[string]def{
	"DeviceClass":   kindDef(deviceClassColumns, deviceClassCells),
	"ResourceClaim": kindDef(resourceClaimColumns, resourceClaimCells),
	"ResourceClaimTemplate": kindDef(deviceClassColumns, func(t *v1.ResourceClaimTemplate, now time.Time) []any {
		return []any{t.Metadata.GetName(), Age(t.Metadata.GetCreationTimestamp(), now)}
	}),
}

// deviceClassColumns are kubectl's for DeviceClass and ResourceClaimTemplate.
var deviceClassColumns = []Column{nameColumn, ageColumn}

func deviceClassCells(c *v1.DeviceClass, now time.Time) []any {
	return []any{c.Metadata.GetName(), Age(c.Metadata.GetCreationTimestamp(), now)}
}

var resourceClaimColumns = []Column{
	nameColumn,
	{Name: "State", Type: "string", Description: "pending (not allocated), allocated, reserved (in use by pods), deleted, deallocating."},
	ageColumn,
}

func resourceClaimCells(c *v1.ResourceClaim, now time.Time) []any {
	return []any{c.Metadata.GetName(), ResourceClaimState(c), Age(c.Metadata.GetCreationTimestamp(), now)}
}

// ResourceClaimState is kubectl's STATE of a claim: deleted, then pending
// or allocated with reserved (pods use it) or deallocating.
func ResourceClaimState(c *v1.ResourceClaim) string {
	var states []string
	deleted := c.GetMetadata().GetDeletionTimestamp() != nil
	if deleted {
		states = append(states, "deleted")
	}
	switch {
	case c.GetStatus().GetAllocation() == nil:
		if !deleted {
			states = append(states, "pending")
		}
	default:
		states = append(states, "allocated")
		if len(c.GetStatus().GetReservedFor()) > 0 {
			states = append(states, "reserved")
		} else if deleted {
			states = append(states, "deallocating")
		}
	}
	return strings.Join(states, ",")
}
