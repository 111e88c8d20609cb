package builtinkernels

// mergeAttrs is a with more's attributes added (more winning), as a new map.
func mergeAttrs(a, more Attrs) Attrs {
	out := Attrs{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}
