package controller

import (
	"fmt"
	"strconv"
	"strings"
)

// ScaledValue resolves "3" or "25%" against total; percentages round up
// (maxSurge, a disruption budget's minAvailable) or down (maxUnavailable), as
// Kubernetes does.
func ScaledValue(v string, total int32, roundUp bool) (int32, error) {
	if v == "" {
		return 0, nil
	}
	if p, ok := strings.CutSuffix(v, "%"); ok {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a percentage", v)
		}
		num := int64(n) * int64(total)
		if roundUp {
			return int32((num + 99) / 100), nil
		}
		return int32(num / 100), nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a number or percentage", v)
	}
	return int32(n), nil
}
