package printers

import (
	"fmt"
	"reflect"
	"sort"

	"k8s.io/client-go/util/jsonpath"

	v1 "github.com/tugboat/tugboat/api/v1"
)

// SortBy orders objs by the value at a field path (--sort-by, any of the
// relaxed forms: .metadata.name, {.status.startTime}), as kubectl does:
// integers and floats by value, strings byte by byte ("web-10" before
// "web-2", "10.0.0.10" before "10.0.0.9": what kubectl prints against a
// Kubernetes API, recorded in testdata/kubectl-door), false before true;
// objects without the field first, objects with equal keys in the order
// given. A path no object has is an error naming it.
func SortBy(objs []v1.Object, field string) error {
	expr, err := RelaxedJSONPath(field)
	if err != nil {
		return fmt.Errorf("--sort-by %s: %v", field, err)
	}
	jp := jsonpath.New("sort").AllowMissingKeys(true)
	if err := jp.Parse(expr); err != nil {
		return fmt.Errorf("--sort-by %s: error parsing jsonpath %s, %v", field, expr, err)
	}
	keys := make([]*reflect.Value, len(objs))
	found := false
	for i, obj := range objs {
		v, err := ObjectValue(obj)
		if err != nil {
			return err
		}
		res, err := jp.FindResults(v)
		if err != nil {
			return fmt.Errorf("--sort-by %s: %v", field, err)
		}
		if len(res) > 0 && len(res[0]) > 0 {
			k := res[0][0]
			for k.Kind() == reflect.Interface && !k.IsNil() {
				k = k.Elem()
			}
			keys[i], found = &k, true
		}
	}
	if !found && len(objs) > 0 {
		return fmt.Errorf("--sort-by %s: couldn't find any field with path %q in the list of objects", field, expr)
	}
	idx := make([]int, len(objs))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return less(keys[idx[a]], keys[idx[b]]) })
	sorted := make([]v1.Object, len(objs))
	for i, j := range idx {
		sorted[i] = objs[j]
	}
	copy(objs, sorted)
	return nil
}

func less(a, b *reflect.Value) bool {
	if a == nil || b == nil {
		return a == nil && b != nil
	}
	switch {
	case isInt(*a) && isInt(*b):
		return a.Int() < b.Int()
	case isNumber(*a) && isNumber(*b):
		return asFloat(*a) < asFloat(*b)
	case a.Kind() == reflect.String && b.Kind() == reflect.String:
		return a.String() < b.String()
	case a.Kind() == reflect.Bool && b.Kind() == reflect.Bool:
		return !a.Bool() && b.Bool()
	}
	return fmt.Sprint(a.Interface()) < fmt.Sprint(b.Interface())
}

func isInt(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return true
	}
	return false
}

func isNumber(v reflect.Value) bool {
	return isInt(v) || v.Kind() == reflect.Float32 || v.Kind() == reflect.Float64
}

func asFloat(v reflect.Value) float64 {
	if isInt(v) {
		return float64(v.Int())
	}
	return v.Float()
}
