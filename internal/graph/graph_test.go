package graph

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/clhost/clhost/model"
)

func layer(typ, name string, inputs ...string) model.Layer {
	return model.Layer{Name: name, Type: typ, Inputs: inputs, Outputs: []string{name}}
}

func mustBuild(t *testing.T, m *model.Model) *Graph {
	t.Helper()
	g, err := Build(m)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func eq(t *testing.T, what string, got, want any) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func input(name string) model.Tensor {
	return model.Tensor{Name: name, Type: model.Float32, Shape: []int{1, 4}}
}

func TestDiamond(t *testing.T) {
	// x → a → {b, c} → d, listed backwards so that file order is no help.
	m := &model.Model{
		Name:    "diamond",
		Tensors: []model.Tensor{input("x")},
		Layers: []model.Layer{
			layer("Add", "d", "b", "c"), // 0
			layer("Tanh", "c", "a"),     // 1
			layer("Sigmoid", "b", "a"),  // 2
			layer("Relu", "a", "x"),     // 3
		},
		Inputs:  []string{"x"},
		Outputs: []string{"d"},
	}
	g := mustBuild(t, m)
	eq(t, "levels", g.Levels(), [][]int{{3}, {1, 2}, {0}})
	eq(t, "order", g.Order(), []int{3, 1, 2, 0})
	eq(t, "deps of d", g.Deps(0), []int{1, 2})
	eq(t, "deps of a", g.Deps(3), []int{})
	eq(t, "users of a", g.Users(3), []int{1, 2})
	eq(t, "consumers of a", g.Consumers("a"), []int{1, 2})
	eq(t, "producer of a", g.Producer("a"), 3)
	eq(t, "producer of x", g.Producer("x"), -1)
	eq(t, "level of b", g.Level(2), 1)
	eq(t, "step of b", g.Step(2), 2)
	// a is last read by b at step 2; x by a at step 0; d outlives the 4 steps.
	eq(t, "last use of a", g.LastUse("a"), 2)
	eq(t, "last use of x", g.LastUse("x"), 0)
	eq(t, "last use of d", g.LastUse("d"), 4)
	eq(t, "last use of unknown", g.LastUse("zzz"), -1)
}

func TestTwoGraphOutputs(t *testing.T) {
	m := &model.Model{
		Name:    "two",
		Tensors: []model.Tensor{input("x")},
		Layers: []model.Layer{
			layer("Relu", "p", "x"),    // 0, graph output read by nobody
			layer("Sigmoid", "q", "x"), // 1
			layer("Tanh", "r", "q"),    // 2, graph output
		},
		Inputs:  []string{"x"},
		Outputs: []string{"p", "r"},
	}
	g := mustBuild(t, m)
	eq(t, "levels", g.Levels(), [][]int{{0, 1}, {2}})
	eq(t, "deps of r", g.Deps(2), []int{1})
	eq(t, "last use of p", g.LastUse("p"), 3)
	eq(t, "last use of r", g.LastUse("r"), 3)
	eq(t, "last use of q", g.LastUse("q"), 2)
	eq(t, "consumers of x", g.Consumers("x"), []int{0, 1})
}

func TestThreeConsumers(t *testing.T) {
	// s feeds c1, c2 (twice) and c3; c3 also waits for c1. c2's output is read by nobody.
	m := &model.Model{
		Name:    "fan",
		Tensors: []model.Tensor{input("x")},
		Layers: []model.Layer{
			layer("Relu", "s", "x"),       // 0
			layer("Sigmoid", "c1", "s"),   // 1
			layer("Add", "c2", "s", "s"),  // 2
			layer("Mul", "c3", "s", "c1"), // 3
			layer("Relu", "tail", "c3"),   // 4
		},
		Inputs:  []string{"x"},
		Outputs: []string{"tail"},
	}
	g := mustBuild(t, m)
	eq(t, "levels", g.Levels(), [][]int{{0}, {1, 2}, {3}, {4}})
	eq(t, "consumers of s", g.Consumers("s"), []int{1, 2, 3})
	eq(t, "users of s", g.Users(0), []int{1, 2, 3})
	eq(t, "deps of c2", g.Deps(2), []int{0})
	eq(t, "deps of c3", g.Deps(3), []int{0, 1})
	eq(t, "last use of s", g.LastUse("s"), 3)
	eq(t, "last use of c2", g.LastUse("c2"), 2) // dead on arrival
	eq(t, "last use of tail", g.LastUse("tail"), 5)
}

func TestCycleNamesLayers(t *testing.T) {
	// a reads c's output, b reads a's, c reads b's: the walk from a goes c, b, then a again.
	m := &model.Model{
		Name:    "loop",
		Tensors: []model.Tensor{input("x")},
		Layers: []model.Layer{
			layer("Add", "a", "x", "c"),
			layer("Relu", "b", "a"),
			layer("Relu", "c", "b"),
		},
		Inputs:  []string{"x"},
		Outputs: []string{"c"},
	}
	_, err := Build(m)
	want := `model "loop": layers form a cycle: "b" -> "c" -> "a" -> "b"`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

func TestBuildRefusesInvalidModel(t *testing.T) {
	m := &model.Model{Name: "bad", Layers: []model.Layer{layer("Relu", "r", "missing")}, Outputs: []string{"r"}}
	_, err := Build(m)
	if err == nil || !strings.Contains(err.Error(), `input "missing" is not a graph input`) {
		t.Fatalf("got %v", err)
	}
}

func TestAccessorsReturnCopies(t *testing.T) {
	m := &model.Model{
		Name:    "c",
		Tensors: []model.Tensor{input("x")},
		Layers:  []model.Layer{layer("Relu", "a", "x"), layer("Relu", "b", "a")},
		Inputs:  []string{"x"},
		Outputs: []string{"b"},
	}
	g := mustBuild(t, m)
	g.Levels()[0][0] = 99
	g.Order()[0] = 99
	g.Consumers("a")[0] = 99
	eq(t, "levels", g.Levels(), [][]int{{0}, {1}})
	eq(t, "order", g.Order(), []int{0, 1})
	eq(t, "consumers", g.Consumers("a"), []int{1})
	if !slices.Equal(g.Deps(1), []int{0}) {
		t.Fatal(g.Deps(1))
	}
}
