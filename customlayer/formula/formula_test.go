package formula

import (
	"strings"
	"testing"
)

func TestEvalInteger(t *testing.T) {
	v := Vars{B: 2, F: 96, Y: 55, X: 40}
	cases := []struct {
		f    string
		want int64
	}{
		{"((X + 31)/32)*32", 64}, // float evaluation: 71
		{"(X+31)/32*32", 64},     // float: 71
		{"X/3*3", 39},            // float: 40
		{"X/3", 13},
		{"X%7", 5},
		{"-X/3", -13}, // truncation toward zero, as in C
		{"-X%7", -5},
		{"X*-1", -40},
		{"X * -Y", -2200},
		{"-(-X)", 40},
		{"B*F*Y*X", 2 * 96 * 55 * 40},
		{"b*f*y*x", 2 * 96 * 55 * 40},
		{"(Y*X+7)/8*8", 2200},
		{"F/B/4", 12},
		{"F/(B*4)", 12},
		{"Y/2+X/3", 27 + 13}, // float: 40.83...
		{"((Y))", 55},
		{"007", 7},
		{"1+2*3", 7},
		{"(1+2)*3", 9},
		{"10-4-3", 3},
		{"100/10/5", 2},
		{"  X\t+\n1 ", 41},
		{"X%32", 8},
		{"(X+1)%4", 1},
		{"9007199254740992", 9007199254740992},
	}
	for _, c := range cases {
		e, err := Parse(c.f)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.f, err)
			continue
		}
		got, err := e.Eval(v)
		if err != nil {
			t.Errorf("%q: %v", c.f, err)
			continue
		}
		if got != c.want {
			t.Errorf("%q with %v = %d, want %d", c.f, v, got, c.want)
		}
		if e.String() != c.f {
			t.Errorf("String() = %q, want %q", e.String(), c.f)
		}
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ f, want string }{
		{"", "empty formula"},
		{"   ", "empty formula"},
		{"X+", "syntax error"},
		{"(X", "syntax error"},
		{"X)", "syntax error"},
		{"X Y", "syntax error"},
		{"W*2", `unknown name "W"`},
		{"BF", `unknown name "BF"`},
		{"X2", `unknown name "X2"`},
		{"true", `unknown name "true"`},
		{"X in Y", `unexpected "in"`},
		{"in", "syntax error"},
		{"X*true", `unknown name "true"`},
		{"- -X", "syntax error"},
		{"1.5*X", "only integer literals"},
		{"X**2", "syntax error"},
		{"X//2", "syntax error"},
		{"X==Y", "unexpected character '='"},
		{"X<<1", "unexpected character '<'"},
		{"'a'", "unexpected character '\\''"},
		{"[X]", "unexpected character '['"},
		{"0x10", "a number runs into a name"},
		{"2X", "a number runs into a name"},
		{"1e3", "a number runs into a name"},
		{"+X", "syntax error"},
		{"X?Y:B", "unexpected character '?'"},
		{"X!", "unexpected character '!'"},
		{"99999999999999999999", "too large"},
		{"()", "unexpected ')'"},
		{"é", "unexpected character 'é'"},
		{strings.Repeat("(", 600) + "X" + strings.Repeat(")", 600), "longer than"},
	}
	for _, c := range cases {
		_, err := Parse(c.f)
		if err == nil {
			t.Errorf("Parse(%q): no error, want %q", c.f, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %q, want it to contain %q", c.f, err, c.want)
		}
		if !strings.Contains(err.Error(), "formula ") {
			t.Errorf("Parse(%q) = %q does not name the formula", c.f, err)
		}
	}
}

func TestEvalErrors(t *testing.T) {
	v := Vars{B: 1, F: 3, Y: 4, X: 5}
	cases := []struct{ f, want string }{
		{"X/(Y-4)", `formula "X/(Y-4)" with B=1 F=3 Y=4 X=5: division by zero`},
		{"X%(B-1)", `formula "X%(B-1)" with B=1 F=3 Y=4 X=5: modulo by zero`},
		{"X-Y-1", `formula "X-Y-1" with B=1 F=3 Y=4 X=5: result 0 is not positive`},
		{"Y-X", `formula "Y-X" with B=1 F=3 Y=4 X=5: result -1 is not positive`},
		{"X/6", "result 0 is not positive"},
		{"9007199254740992*9007199254740992", "integer overflow"},
		{"0-9007199254740992*1024-9007199254740992*1024*1023", "integer overflow"},
	}
	for _, c := range cases {
		e, err := Parse(c.f)
		if err != nil {
			t.Fatalf("Parse(%q): %v", c.f, err)
		}
		_, err = e.EvalSize(v)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.f, err, c.want)
		}
	}
	if _, err := (Expr{}).Eval(v); err == nil {
		t.Error("zero Expr evaluated without error")
	}
}

func TestParseList(t *testing.T) {
	l, err := ParseList("Y,((X + 31)/32)*32")
	if err != nil {
		t.Fatal(err)
	}
	got, err := EvalSizes(l, Vars{1, 1, 7, 40})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != 7 || got[1] != 64 {
		t.Errorf("got %v, want [7 64]", got)
	}
	if Join(l) != "Y,((X + 31)/32)*32" {
		t.Errorf("Join = %q", Join(l))
	}
	for _, c := range []struct{ s, want string }{
		{"", "empty list"},
		{"X,Y,F,B", "4 entries, at most 3"},
		{"X,,Y", "entry 2 is empty"},
		{"X,Y,", "entry 3 is empty"},
		{"X,W", `unknown name "W"`},
	} {
		if _, err := ParseList(c.s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseList(%q) = %v, want %q", c.s, err, c.want)
		}
	}
}

func FuzzFormula(f *testing.F) {
	for _, s := range []string{"((X + 31)/32)*32", "B*F*Y*X", "X/(Y-Y)", "-X%3", "X,Y,B*F", "((", "X**2", "[a]", "'x'", "1.5", "0x1f", "a?b:c", "X*-Y", "9007199254740993"} {
		f.Add(s, int64(1), int64(3), int64(5), int64(7))
	}
	f.Fuzz(func(t *testing.T, s string, b, ff, y, x int64) {
		v := Vars{b, ff, y, x}
		if e, err := Parse(s); err == nil {
			if e.String() != s {
				t.Fatalf("String() = %q, want %q", e.String(), s)
			}
			r, err := e.EvalSize(v)
			if err == nil && r <= 0 {
				t.Fatalf("EvalSize gave %d without error", r)
			}
		}
		if l, err := ParseList(s); err == nil {
			if len(l) < 1 || len(l) > MaxEntries {
				t.Fatalf("ParseList gave %d entries", len(l))
			}
			_, _ = EvalSizes(l, v)
		}
	})
}
