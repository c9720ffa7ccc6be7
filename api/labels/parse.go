package labels

import (
	"fmt"
	"strings"
)

// Parse reads a selector string. Errors name the offending term.
func Parse(s string) (Selector, error) {
	p := parser{in: s}
	var sel Selector
	for {
		p.skipSpace()
		if p.eof() {
			if len(sel) > 0 && p.trailingComma {
				return nil, fmt.Errorf("label selector %q: trailing comma", s)
			}
			return sel, nil
		}
		r, err := p.requirement()
		if err != nil {
			return nil, fmt.Errorf("label selector %q: %w", s, err)
		}
		if err := ValidateKey(r.Key); err != nil {
			return nil, fmt.Errorf("label selector %q: key %q: %w", s, r.Key, err)
		}
		for _, v := range r.Values {
			if err := ValidateValue(v); err != nil {
				return nil, fmt.Errorf("label selector %q: value %q: %w", s, v, err)
			}
		}
		sel = append(sel, r)
		p.skipSpace()
		p.trailingComma = false
		if p.eof() {
			return sel, nil
		}
		if p.peek() != ',' {
			return nil, fmt.Errorf("label selector %q: expected ',' at offset %d", s, p.pos)
		}
		p.pos++
		p.trailingComma = true
	}
}

type parser struct {
	in            string
	pos           int
	trailingComma bool
}

func (p *parser) eof() bool  { return p.pos >= len(p.in) }
func (p *parser) peek() byte { return p.in[p.pos] }

func (p *parser) skipSpace() {
	for !p.eof() && (p.peek() == ' ' || p.peek() == '\t') {
		p.pos++
	}
}

func isWordByte(c byte) bool {
	return c == '-' || c == '_' || c == '.' || c == '/' ||
		(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

func (p *parser) word() string {
	start := p.pos
	for !p.eof() && isWordByte(p.peek()) {
		p.pos++
	}
	return p.in[start:p.pos]
}

func (p *parser) requirement() (Requirement, error) {
	if p.peek() == '!' {
		p.pos++
		p.skipSpace()
		key := p.word()
		if key == "" {
			return Requirement{}, fmt.Errorf("expected a key after '!' at offset %d", p.pos)
		}
		return Requirement{Key: key, Op: DoesNotExist}, nil
	}
	key := p.word()
	if key == "" {
		return Requirement{}, fmt.Errorf("expected a key at offset %d", p.pos)
	}
	p.skipSpace()
	if p.eof() || p.peek() == ',' {
		return Requirement{Key: key, Op: Exists}, nil
	}
	switch {
	case strings.HasPrefix(p.in[p.pos:], "!="):
		p.pos += 2
		return p.single(key, NotEquals)
	case strings.HasPrefix(p.in[p.pos:], "=="):
		p.pos += 2
		return p.single(key, Equals)
	case p.peek() == '=':
		p.pos++
		return p.single(key, Equals)
	}
	op := p.word()
	switch strings.ToLower(op) {
	case "in":
		return p.set(key, In)
	case "notin":
		return p.set(key, NotIn)
	}
	return Requirement{}, fmt.Errorf("unknown operator %q after key %q", op, key)
}

func (p *parser) single(key string, op Operator) (Requirement, error) {
	p.skipSpace()
	v := p.word()
	return Requirement{Key: key, Op: op, Values: []string{v}}, nil
}

func (p *parser) set(key string, op Operator) (Requirement, error) {
	p.skipSpace()
	if p.eof() || p.peek() != '(' {
		return Requirement{}, fmt.Errorf("expected '(' after %s for key %q", op, key)
	}
	p.pos++
	var vals []string
	for {
		p.skipSpace()
		if p.eof() {
			return Requirement{}, fmt.Errorf("missing ')' for key %q", key)
		}
		if p.peek() == ')' {
			p.pos++
			break
		}
		v := p.word()
		if v == "" {
			return Requirement{}, fmt.Errorf("bad value at offset %d for key %q", p.pos, key)
		}
		vals = append(vals, v)
		p.skipSpace()
		if !p.eof() && p.peek() == ',' {
			p.pos++
		}
	}
	if len(vals) == 0 {
		return Requirement{}, fmt.Errorf("empty value set for key %q", key)
	}
	return Requirement{Key: key, Op: op, Values: vals}, nil
}
