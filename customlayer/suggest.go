package customlayer

import (
	"strings"
	"unicode/utf8"
)

// Near returns the layer whose name is nearest typ without being it — the same name in
// other case, else one edit away (a character added, dropped, changed, or two neighbours
// swapped) — so that a model's type that no layer defines can get a "did you mean".
func (r *Registry) Near(typ string) (*Layer, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var edit *Layer
	for _, name := range r.order {
		switch {
		case name == typ:
			continue
		case strings.EqualFold(name, typ):
			return r.byName[name], true
		case edit == nil && oneEdit(name, typ):
			edit = r.byName[name]
		}
	}
	return edit, edit != nil
}

// oneEdit says whether a and b differ by exactly one insertion, deletion, substitution
// or transposition of neighbouring characters.
func oneEdit(a, b string) bool {
	x, y := []rune(a), []rune(b)
	if utf8.RuneCountInString(a) < utf8.RuneCountInString(b) {
		x, y = y, x
	}
	switch len(x) - len(y) {
	case 0:
		var diff []int
		for i := range x {
			if x[i] != y[i] {
				diff = append(diff, i)
			}
		}
		switch len(diff) {
		case 1:
			return true
		case 2:
			i, j := diff[0], diff[1]
			return j == i+1 && x[i] == y[j] && x[j] == y[i]
		}
		return false
	case 1:
		// x is one longer: dropping one of its characters gives y.
		i := 0
		for i < len(y) && x[i] == y[i] {
			i++
		}
		return string(x[i+1:]) == string(y[i:])
	}
	return false
}

// NearName returns the name of names nearest name without being it — the same in other
// case or without underscores, else one edit away — so that a Define's misspelled param
// can get a "did you mean" naming an attribute the layer does carry.
func NearName(name string, names []string) (string, bool) {
	squash := func(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "")) }
	edit := ""
	for _, n := range names {
		switch {
		case n == name:
			continue
		case strings.EqualFold(n, name), squash(n) == squash(name):
			return n, true
		case edit == "" && oneEdit(n, name):
			edit = n
		}
	}
	return edit, edit != ""
}
