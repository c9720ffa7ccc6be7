package validation

import (
	"fmt"
	"slices"
	"sort"

	"github.com/tugboat/tugboat/api/quota"
	"github.com/tugboat/tugboat/api/resource"
	v1 "github.com/tugboat/tugboat/api/v1"
)

// ServiceAccount validates a service account (its name is a DNS subdomain,
// as it becomes part of a user name).
func ServiceAccount(sa *v1.ServiceAccount) Errs {
	var errs Errs
	ObjectMeta(&errs, sa.Metadata, true, DNSSubdomain)
	imagePullSecrets(&errs, "imagePullSecrets", sa.ImagePullSecrets)
	return errs
}

// The types of a LimitRange's items.
const (
	LimitTypeContainer = "Container"
	LimitTypePod       = "Pod"
	LimitTypeClaim     = "PersistentVolumeClaim"
)

// limitResources are the resources each type of LimitRange item may
// constrain: what a container may request, and a claim's storage.
var limitResources = map[string][]string{
	LimitTypeContainer: {"cpu", "memory", "ephemeral-storage"},
	LimitTypePod:       {"cpu", "memory", "ephemeral-storage"},
	LimitTypeClaim:     {"storage"},
}

// LimitRange validates a limit range with Kubernetes' rules: one item per
// type, known resources, well-formed quantities, min <= defaultRequest <=
// default <= max, a ratio of at least 1 and at most max/min; defaults only
// for containers; a claim item bounds storage.
func LimitRange(lr *v1.LimitRange) Errs {
	var errs Errs
	ObjectMeta(&errs, lr.Metadata, true, DNSSubdomain)
	seen := map[string]bool{}
	for i, item := range lr.GetSpec().GetLimits() {
		p := fmt.Sprintf("spec.limits[%d]", i)
		if item.Type == "" {
			errs.Add(p+".type", "required (Container, Pod or PersistentVolumeClaim)")
			continue
		}
		OneOf(&errs, p+".type", item.Type, LimitTypeContainer, LimitTypePod, LimitTypeClaim)
		allowed, ok := limitResources[item.Type]
		if !ok {
			continue
		}
		if seen[item.Type] {
			errs.Add(p+".type", "Duplicate value: %q", item.Type)
		}
		seen[item.Type] = true
		q := func(field string, m map[string]string) map[string]resource.Quantity {
			out := map[string]resource.Quantity{}
			for _, name := range sortedKeys(m) {
				fp := p + "." + field + "." + name
				if !slices.Contains(allowed, name) {
					errs.Add(fp, "unknown resource %q for type %s (%s)", name, item.Type, joinOr(allowed))
					continue
				}
				v, err := resource.Parse(m[name])
				if err != nil {
					errs.Add(fp, "%v", err)
					continue
				}
				out[name] = v
			}
			return out
		}
		maxQ, minQ := q("max", item.Max), q("min", item.Min)
		def, defReq := q("default", item.Default), q("defaultRequest", item.DefaultRequest)
		ratio := q("maxLimitRequestRatio", item.MaxLimitRequestRatio)
		if item.Type != LimitTypeContainer {
			if len(item.Default) > 0 {
				errs.Add(p+".default", "may not be specified when `type` is '%s'", item.Type)
			}
			if len(item.DefaultRequest) > 0 {
				errs.Add(p+".defaultRequest", "may not be specified when `type` is '%s'", item.Type)
			}
		}
		if item.Type == LimitTypeClaim {
			if len(item.MaxLimitRequestRatio) > 0 {
				errs.Add(p+".maxLimitRequestRatio", "may not be specified when `type` is '%s'", item.Type)
			}
			if _, okMin := item.Min["storage"]; !okMin {
				if _, okMax := item.Max["storage"]; !okMax {
					errs.Add(p+".limits", "either minimum or maximum storage value is required, but neither was provided")
				}
			}
		}
		for _, name := range allowed {
			mx, hasMax := maxQ[name]
			mn, hasMin := minQ[name]
			d, hasDef := def[name]
			dr, hasDefReq := defReq[name]
			r, hasRatio := ratio[name]
			if hasMin && hasMax && mn.Cmp(mx) > 0 {
				errs.Add(p+".min."+name, "min value %s is greater than max value %s", item.Min[name], item.Max[name])
			}
			if hasDefReq {
				if hasMin && mn.Cmp(dr) > 0 {
					errs.Add(p+".defaultRequest."+name, "min value %s is greater than default request value %s", item.Min[name], item.DefaultRequest[name])
				}
				if hasMax && dr.Cmp(mx) > 0 {
					errs.Add(p+".defaultRequest."+name, "default request value %s is greater than max value %s", item.DefaultRequest[name], item.Max[name])
				}
				if hasDef && dr.Cmp(d) > 0 {
					errs.Add(p+".defaultRequest."+name, "default request value %s is greater than default limit value %s", item.DefaultRequest[name], item.Default[name])
				}
			}
			if hasDef {
				if hasMin && mn.Cmp(d) > 0 {
					errs.Add(p+".default."+name, "min value %s is greater than default value %s", item.Min[name], item.Default[name])
				}
				if hasMax && d.Cmp(mx) > 0 {
					errs.Add(p+".default."+name, "default value %s is greater than max value %s", item.Default[name], item.Max[name])
				}
			}
			if hasRatio {
				if r.Cmp(resource.New(1)) < 0 {
					errs.Add(p+".maxLimitRequestRatio."+name, "ratio %s is less than 1", item.MaxLimitRequestRatio[name])
				}
				if hasMin && hasMax && mn.MilliValue() > 0 {
					if limit := float64(mx.MilliValue()) / float64(mn.MilliValue()); float64(r.MilliValue())/1000 > limit {
						errs.Add(p+".maxLimitRequestRatio."+name, "ratio %s is greater than max/min = %f", item.MaxLimitRequestRatio[name], limit)
					}
				}
			}
		}
	}
	return errs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func joinOr(list []string) string {
	switch len(list) {
	case 1:
		return list[0]
	case 2:
		return list[0] + " or " + list[1]
	}
	out := ""
	for i, s := range list {
		switch {
		case i == len(list)-1:
			out += " or " + s
		case i > 0:
			out += ", " + s
		default:
			out += s
		}
	}
	return out
}

// ResourceQuota validates a quota: every name in spec.hard (and in the
// status the admission and the controller write) is one a quota serves
// (api/quota), with a well-formed quantity, whole for object counts.
func ResourceQuota(rq *v1.ResourceQuota) Errs {
	var errs Errs
	ObjectMeta(&errs, rq.Metadata, true, DNSSubdomain)
	quotaList(&errs, "spec.hard", rq.GetSpec().GetHard())
	quotaList(&errs, "status.hard", rq.GetStatus().GetHard())
	quotaList(&errs, "status.used", rq.GetStatus().GetUsed())
	return errs
}

func quotaList(errs *Errs, path string, m map[string]string) {
	for _, name := range sortedKeys(m) {
		fp := path + "." + name
		if err := quota.ValidateName(name); err != nil {
			errs.Add(fp, "%v", err)
			continue
		}
		q, err := resource.Parse(m[name])
		if err != nil {
			errs.Add(fp, "%v", err)
			continue
		}
		if quota.IsInteger(name) && q.MilliValue()%1000 != 0 {
			errs.Add(fp, "%s: must be an integer", m[name])
		}
	}
}
