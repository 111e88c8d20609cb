// Package formula parses and evaluates the work-size formulas of a custom layer
// (docs/custom-layers.md, "Work sizes"): comma-separated lists of 1 to 3 integer
// expressions over B, F, Y and X (either case) with + - * / %, parentheses and integer
// literals.
//
// Parsing goes through github.com/Knetic/govaluate's tokenizer, but evaluation is ours:
// govaluate computes in float64, where ((X + 31)/32)*32 with X = 40 is 71, while OpenCL
// work sizes need C integer arithmetic, where it is 64. Every / and % truncates toward
// zero at its own step, exactly as in C, and overflow is an error rather than a wrap.
package formula

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/Knetic/govaluate"
)

// MaxLen is the longest formula accepted. Work-size formulas are a few dozen characters;
// the limit keeps hostile input from costing time or stack.
const MaxLen = 1024

// maxLiteral bounds integer literals so that govaluate's float64 holds them exactly.
const maxLiteral = 1 << 53

// Vars holds the dimensions a formula may use.
type Vars struct{ B, F, Y, X int64 }

func (v Vars) String() string {
	return fmt.Sprintf("B=%d F=%d Y=%d X=%d", v.B, v.F, v.Y, v.X)
}

// Error is a formula that does not parse or cannot be evaluated.
type Error struct {
	Formula string // the formula as written
	Vars    *Vars  // the values it saw; nil for a parse error
	Msg     string
}

func (e *Error) Error() string {
	if e.Vars != nil {
		return fmt.Sprintf("formula %q with %v: %s", e.Formula, *e.Vars, e.Msg)
	}
	return fmt.Sprintf("formula %q: %s", e.Formula, e.Msg)
}

type op byte

const (
	opNum op = iota
	opVar
	opNeg
	opAdd
	opSub
	opMul
	opDiv
	opMod
)

type node struct {
	op   op
	val  int64 // opNum: the literal; opVar: 0..3 for B, F, Y, X
	l, r *node
}

// Expr is one parsed formula. The zero Expr is invalid; get one from Parse.
type Expr struct {
	text string
	root *node
}

// String returns the formula as written.
func (e Expr) String() string { return e.text }

// Valid reports whether e came from a successful Parse.
func (e Expr) Valid() bool { return e.root != nil }

// Parse parses one formula.
func Parse(s string) (e Expr, err error) {
	fail := func(format string, args ...any) (Expr, error) {
		return Expr{}, &Error{Formula: s, Msg: fmt.Sprintf(format, args...)}
	}
	if strings.TrimSpace(s) == "" {
		return fail("empty formula")
	}
	if len(s) > MaxLen {
		return fail("longer than %d characters", MaxLen)
	}
	// Only these characters can form a valid formula. Filtering first keeps every
	// other govaluate feature (strings, dates, [escaped names], comparisons, '.' in
	// floating-point literals) out, and gives a precise message.
	var spaced strings.Builder
	prevDigit, inName := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			prevDigit = !inName
			spaced.WriteByte(c)
			continue
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_':
			if prevDigit {
				return fail("a number runs into a name at %q (only integer literals and B, F, Y, X are allowed)", s[i:min(len(s), i+8)])
			}
			spaced.WriteByte(c)
			inName = true
			continue
		case c == ' ', c == '\t', c == '\n', c == '\r':
			spaced.WriteByte(' ')
		case c == '(', c == ')':
			spaced.WriteByte(c)
		case c == '+', c == '-', c == '*', c == '/', c == '%':
			// govaluate glues adjacent symbols into one token ("*-" is not an
			// operator); spacing them out lets X*-Y mean X * (-Y) as in C, while
			// "**" and "//" still fail as two operators in a row.
			spaced.WriteByte(' ')
			spaced.WriteByte(c)
			spaced.WriteByte(' ')
		default:
			r := []rune(s[i:])[0]
			if c == '.' {
				return fail("unexpected '.': only integer literals are allowed")
			}
			return fail("unexpected character %q", r)
		}
		prevDigit, inName = false, false
	}

	toks, err := tokenize(spaced.String())
	if err != nil {
		return fail("syntax error: %v", err)
	}
	p := parser{toks: toks, text: s}
	root, err := p.expr(0)
	if err == nil && p.pos < len(p.toks) {
		err = p.errorf("unexpected %s", describe(p.toks[p.pos]))
	}
	if err != nil {
		return Expr{}, err
	}
	return Expr{text: s, root: root}, nil
}

// tokenize runs govaluate's lexer; a panic inside it becomes an error.
func tokenize(s string) (toks []govaluate.ExpressionToken, err error) {
	defer func() {
		if r := recover(); r != nil {
			toks, err = nil, fmt.Errorf("%v", r)
		}
	}()
	ex, err := govaluate.NewEvaluableExpression(s)
	if err != nil {
		return nil, fmt.Errorf("%s", strings.TrimSpace(err.Error()))
	}
	return ex.Tokens(), nil
}

type parser struct {
	toks []govaluate.ExpressionToken
	pos  int
	text string
}

func (p *parser) errorf(format string, args ...any) error {
	return &Error{Formula: p.text, Msg: fmt.Sprintf(format, args...)}
}

func describe(t govaluate.ExpressionToken) string {
	switch t.Kind {
	case govaluate.CLAUSE:
		return "'('"
	case govaluate.CLAUSE_CLOSE:
		return "')'"
	}
	return fmt.Sprintf("%q", fmt.Sprint(t.Value))
}

func (p *parser) peekOp() string {
	if p.pos >= len(p.toks) {
		return ""
	}
	t := p.toks[p.pos]
	if t.Kind != govaluate.MODIFIER {
		return ""
	}
	s, _ := t.Value.(string)
	return s
}

// expr parses a sum; depth bounds the recursion (MaxLen already does, this is a guard).
func (p *parser) expr(depth int) (*node, error) {
	if depth > MaxLen {
		return nil, p.errorf("nested too deeply")
	}
	l, err := p.term(depth)
	if err != nil {
		return nil, err
	}
	for {
		var o op
		switch p.peekOp() {
		case "+":
			o = opAdd
		case "-":
			o = opSub
		default:
			return l, nil
		}
		p.pos++
		r, err := p.term(depth)
		if err != nil {
			return nil, err
		}
		l = &node{op: o, l: l, r: r}
	}
}

func (p *parser) term(depth int) (*node, error) {
	l, err := p.unary(depth)
	if err != nil {
		return nil, err
	}
	for {
		var o op
		switch p.peekOp() {
		case "*":
			o = opMul
		case "/":
			o = opDiv
		case "%":
			o = opMod
		case "", "+", "-":
			return l, nil
		default:
			return nil, p.errorf("operator %q is not allowed (use + - * / %%)", p.peekOp())
		}
		p.pos++
		r, err := p.unary(depth)
		if err != nil {
			return nil, err
		}
		l = &node{op: o, l: l, r: r}
	}
}

func (p *parser) unary(depth int) (*node, error) {
	if depth > MaxLen {
		return nil, p.errorf("nested too deeply")
	}
	if p.pos >= len(p.toks) {
		return nil, p.errorf("unexpected end of formula")
	}
	t := p.toks[p.pos]
	switch t.Kind {
	case govaluate.PREFIX:
		if s, _ := t.Value.(string); s != "-" {
			return nil, p.errorf("operator %q is not allowed", s)
		}
		p.pos++
		x, err := p.unary(depth + 1)
		if err != nil {
			return nil, err
		}
		return &node{op: opNeg, l: x}, nil
	case govaluate.NUMERIC:
		p.pos++
		f, _ := t.Value.(float64)
		if f != math.Trunc(f) || f < 0 {
			return nil, p.errorf("%v is not an integer literal", f)
		}
		if f > maxLiteral {
			return nil, p.errorf("number %s is too large", strconv.FormatFloat(f, 'f', -1, 64))
		}
		return &node{op: opNum, val: int64(f)}, nil
	case govaluate.VARIABLE, govaluate.BOOLEAN, govaluate.COMPARATOR, govaluate.FUNCTION:
		p.pos++
		name := fmt.Sprint(t.Value)
		if t.Kind == govaluate.BOOLEAN {
			name = strconv.FormatBool(t.Value == true)
		}
		switch strings.ToUpper(name) {
		case "B":
			return &node{op: opVar, val: 0}, nil
		case "F":
			return &node{op: opVar, val: 1}, nil
		case "Y":
			return &node{op: opVar, val: 2}, nil
		case "X":
			return &node{op: opVar, val: 3}, nil
		}
		return nil, p.errorf("unknown name %q (a formula may use B, F, Y and X)", name)
	case govaluate.CLAUSE:
		p.pos++
		x, err := p.expr(depth + 1)
		if err != nil {
			return nil, err
		}
		if p.pos >= len(p.toks) || p.toks[p.pos].Kind != govaluate.CLAUSE_CLOSE {
			return nil, p.errorf("missing ')'")
		}
		p.pos++
		return x, nil
	}
	return nil, p.errorf("unexpected %s", describe(t))
}

// Eval evaluates e in C integer arithmetic: / and % truncate toward zero at every step.
// Division or modulo by zero and int64 overflow are errors naming the formula and v.
func (e Expr) Eval(v Vars) (int64, error) {
	if e.root == nil {
		return 0, &Error{Formula: e.text, Vars: &v, Msg: "formula was not parsed"}
	}
	r, msg := eval(e.root, &v)
	if msg != "" {
		return 0, &Error{Formula: e.text, Vars: &v, Msg: msg}
	}
	return r, nil
}

// EvalSize evaluates e as a work size, which must be positive.
func (e Expr) EvalSize(v Vars) (int64, error) {
	r, err := e.Eval(v)
	if err != nil {
		return 0, err
	}
	if r <= 0 {
		return 0, &Error{Formula: e.text, Vars: &v, Msg: fmt.Sprintf("result %d is not positive", r)}
	}
	return r, nil
}

func eval(n *node, v *Vars) (int64, string) {
	switch n.op {
	case opNum:
		return n.val, ""
	case opVar:
		return [4]int64{v.B, v.F, v.Y, v.X}[n.val], ""
	case opNeg:
		x, msg := eval(n.l, v)
		if msg != "" {
			return 0, msg
		}
		if x == math.MinInt64 {
			return 0, "integer overflow"
		}
		return -x, ""
	}
	a, msg := eval(n.l, v)
	if msg != "" {
		return 0, msg
	}
	b, msg := eval(n.r, v)
	if msg != "" {
		return 0, msg
	}
	switch n.op {
	case opAdd:
		r := a + b
		if (a > 0 && b > 0 && r < 0) || (a < 0 && b < 0 && r >= 0) {
			return 0, "integer overflow"
		}
		return r, ""
	case opSub:
		r := a - b
		if (a >= 0 && b < 0 && r < 0) || (a < 0 && b > 0 && r >= 0) {
			return 0, "integer overflow"
		}
		return r, ""
	case opMul:
		if a == 0 || b == 0 {
			return 0, ""
		}
		r := a * b
		if r/b != a || (a == -1 && b == math.MinInt64) || (b == -1 && a == math.MinInt64) {
			return 0, "integer overflow"
		}
		return r, ""
	case opDiv, opMod:
		if b == 0 {
			if n.op == opDiv {
				return 0, "division by zero"
			}
			return 0, "modulo by zero"
		}
		if a == math.MinInt64 && b == -1 {
			if n.op == opMod {
				return 0, ""
			}
			return 0, "integer overflow"
		}
		if n.op == opDiv {
			return a / b, ""
		}
		return a % b, ""
	}
	return 0, "bad formula"
}

// MaxEntries is the most formulas a work-size list may hold (OpenCL has 3 dimensions).
const MaxEntries = 3

// ParseList parses a comma-separated list of 1 to MaxEntries formulas. An empty or
// all-blank string is an error; callers that allow "no list" check for that first.
func ParseList(s string) ([]Expr, error) {
	if strings.TrimSpace(s) == "" {
		return nil, &Error{Formula: s, Msg: "empty list"}
	}
	parts := strings.Split(s, ",")
	if len(parts) > MaxEntries {
		return nil, &Error{Formula: s, Msg: fmt.Sprintf("%d entries, at most %d are allowed", len(parts), MaxEntries)}
	}
	out := make([]Expr, 0, len(parts))
	for i, p := range parts {
		if strings.TrimSpace(p) == "" {
			return nil, &Error{Formula: s, Msg: fmt.Sprintf("entry %d is empty", i+1)}
		}
		e, err := Parse(strings.TrimSpace(p))
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// EvalSizes evaluates each formula of list as a work size (positive integers).
func EvalSizes(list []Expr, v Vars) ([]int64, error) {
	out := make([]int64, len(list))
	for i, e := range list {
		r, err := e.EvalSize(v)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

// Join returns the list as written, entries separated by commas.
func Join(list []Expr) string {
	s := make([]string, len(list))
	for i, e := range list {
		s[i] = e.text
	}
	return strings.Join(s, ",")
}
