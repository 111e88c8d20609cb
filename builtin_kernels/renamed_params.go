package builtinkernels

// renamedParams shows an op's attributes under other names: name → the attribute read
// instead, "" for one that reads as absent. A fused layer hands each of its parts the
// attributes that part reads as a plain op's (invResParts, fireParts).
type renamedParams struct {
	p      Params
	rename map[string]string
}

func (r renamedParams) key(name string) string {
	if k, ok := r.rename[name]; ok {
		return k
	}
	return name
}
func (r renamedParams) Int(n string, d int64) int64            { return r.p.Int(r.key(n), d) }
func (r renamedParams) Float(n string, d float32) float32      { return r.p.Float(r.key(n), d) }
func (r renamedParams) Ints(n string, d []int64) []int64       { return r.p.Ints(r.key(n), d) }
func (r renamedParams) Floats(n string, d []float32) []float32 { return r.p.Floats(r.key(n), d) }
func (r renamedParams) String(n string, d string) string       { return r.p.String(r.key(n), d) }
func (r renamedParams) Has(n string) bool                      { k := r.key(n); return k != "" && r.p.Has(k) }
