// Package resource parses Kubernetes quantities: "250m" and "1.5" cpu,
// "128Mi", "1G" and "1e9" bytes. Values are held in milli-units as int64, which
// covers every realistic cpu and memory amount (up to ~9.2e15 whole units).
package resource

import (
	"fmt"
	"math"
	"math/big"
	"strings"
)

// Quantity is an amount in milli-units (cpu "250m" -> 250; memory "1Ki" -> 1024000).
type Quantity struct{ milli int64 }

var suffixes = map[string]*big.Rat{
	"":   big.NewRat(1, 1),
	"m":  big.NewRat(1, 1000),
	"k":  big.NewRat(1e3, 1),
	"M":  big.NewRat(1e6, 1),
	"G":  big.NewRat(1e9, 1),
	"T":  big.NewRat(1e12, 1),
	"P":  big.NewRat(1e15, 1),
	"E":  big.NewRat(1e18, 1),
	"Ki": big.NewRat(1<<10, 1),
	"Mi": big.NewRat(1<<20, 1),
	"Gi": big.NewRat(1<<30, 1),
	"Ti": big.NewRat(1<<40, 1),
	"Pi": big.NewRat(1<<50, 1),
	"Ei": big.NewRat(1<<60, 1),
}

// Parse reads a quantity. The error says what is wrong and shows the forms
// that are accepted.
func Parse(s string) (Quantity, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return Quantity{}, fmt.Errorf("quantity is empty")
	}
	// Split number and suffix.
	i := 0
	if in[0] == '+' || in[0] == '-' {
		i++
	}
	for i < len(in) && (in[i] >= '0' && in[i] <= '9' || in[i] == '.') {
		i++
	}
	num, suffix := in[:i], in[i:]
	exp := 0
	if len(suffix) > 1 && (suffix[0] == 'e' || suffix[0] == 'E') {
		if _, err := fmt.Sscanf(suffix[1:], "%d", &exp); err != nil || fmt.Sprint(exp) != strings.TrimPrefix(suffix[1:], "+") {
			return Quantity{}, badQuantity(s)
		}
		suffix = ""
	}
	mult, ok := suffixes[suffix]
	if !ok || num == "" || num == "+" || num == "-" || strings.Count(num, ".") > 1 {
		return Quantity{}, badQuantity(s)
	}
	r, ok := new(big.Rat).SetString(num)
	if !ok {
		return Quantity{}, badQuantity(s)
	}
	if r.Sign() < 0 {
		return Quantity{}, fmt.Errorf("quantity %q must not be negative", s)
	}
	if exp < -18 || exp > 18 {
		return Quantity{}, fmt.Errorf("quantity %q is out of range", s)
	}
	r.Mul(r, mult)
	if exp != 0 {
		p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(exp))), nil)
		if exp > 0 {
			r.Mul(r, new(big.Rat).SetInt(p))
		} else {
			r.Quo(r, new(big.Rat).SetInt(p))
		}
	}
	r.Mul(r, big.NewRat(1000, 1))
	// Round up to whole milli-units, as Kubernetes does.
	n := new(big.Int).Quo(r.Num(), r.Denom())
	if new(big.Int).Mul(n, r.Denom()).Cmp(r.Num()) != 0 {
		n.Add(n, big.NewInt(1))
	}
	if !n.IsInt64() || n.Int64() > math.MaxInt64/2 {
		return Quantity{}, fmt.Errorf("quantity %q is too large", s)
	}
	return Quantity{milli: n.Int64()}, nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func badQuantity(s string) error {
	return fmt.Errorf("quantity %q is not valid: use a number with an optional suffix such as 250m, 0.5, 2, 128Mi, 1Gi, 500M or 1e9", s)
}

// MustParse is for constants in tests and defaults.
func MustParse(s string) Quantity {
	q, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return q
}

// NewMilli makes a quantity of n milli-units.
func NewMilli(n int64) Quantity { return Quantity{milli: n} }

// New makes a quantity of n whole units.
func New(n int64) Quantity { return Quantity{milli: n * 1000} }

// MilliValue is the amount in milli-units (cpu millicores).
func (q Quantity) MilliValue() int64 { return q.milli }

// Value is the amount in whole units, rounded up (memory bytes, pod counts).
func (q Quantity) Value() int64 { return (q.milli + 999) / 1000 }

// IsZero reports a zero amount.
func (q Quantity) IsZero() bool { return q.milli == 0 }

// Cmp compares two quantities.
func (q Quantity) Cmp(o Quantity) int {
	switch {
	case q.milli < o.milli:
		return -1
	case q.milli > o.milli:
		return 1
	}
	return 0
}

// Add and Sub return sums and differences.
func (q Quantity) Add(o Quantity) Quantity { return Quantity{q.milli + o.milli} }
func (q Quantity) Sub(o Quantity) Quantity { return Quantity{q.milli - o.milli} }

// CPUString formats a cpu amount: "2", "250m".
func (q Quantity) CPUString() string {
	if q.milli%1000 == 0 {
		return fmt.Sprint(q.milli / 1000)
	}
	return fmt.Sprintf("%dm", q.milli)
}

// BytesString formats a byte amount with the largest exact binary suffix:
// "128Mi", "1536Ki", "1000".
func (q Quantity) BytesString() string {
	v := q.Value()
	for _, s := range []struct {
		suf  string
		unit int64
	}{{"Ei", 1 << 60}, {"Pi", 1 << 50}, {"Ti", 1 << 40}, {"Gi", 1 << 30}, {"Mi", 1 << 20}, {"Ki", 1 << 10}} {
		if v != 0 && v%s.unit == 0 {
			return fmt.Sprintf("%d%s", v/s.unit, s.suf)
		}
	}
	return fmt.Sprint(v)
}

// String formats for cpu when there are milli-units, else whole units.
func (q Quantity) String() string {
	if q.milli%1000 != 0 {
		return fmt.Sprintf("%dm", q.milli)
	}
	return fmt.Sprint(q.milli / 1000)
}
