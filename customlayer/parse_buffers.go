package customlayer

import (
	"fmt"
	"strings"

	"github.com/beevik/etree"
)

// The <Buffers> element: <Tensor> and <Data> arguments, their arg-index sequence and
// each port's format.

func (p *parser) buffers(e *etree.Element, l *Layer, label string) {
	p.attrs(e, label, "Buffers")
	used := map[int]string{}
	type portKey struct {
		kind TensorKind
		port int
	}
	portFormat := map[portKey]Tensor{}
	portElem := map[portKey]string{}
	allOK := true
	count, ntensor, ndata, noutput := 0, 0, 0, 0
	claim := func(c *etree.Element, elem string, idx int) {
		if prev, dup := used[idx]; dup {
			p.errorf(p.line(c), label, elem, "arg-index %d is already used by %s", idx, prev)
			return
		}
		used[idx] = elem
	}
	for _, c := range e.ChildElements() {
		switch {
		case isTag(c, "Tensor"):
			count++
			ntensor++
			elem := fmt.Sprintf("Tensor #%d", ntensor)
			m := p.attrs(c, label, elem, "arg-index", "type", "port-index", "format")
			p.noChildren(c, label, elem)
			t := Tensor{Line: p.line(c)}
			ok := true
			idx, iok := p.index(c, m, label, elem, "arg-index")
			t.ArgIndex = idx
			if !iok {
				allOK, ok = false, false
			}
			if v, vok := p.required(c, m, label, elem, "type"); vok {
				switch strings.ToLower(strings.TrimSpace(v)) {
				case "input":
					t.Kind = Input
				case "output":
					t.Kind = Output
					noutput++
				default:
					p.errorf(t.Line, label, elem, "unknown tensor type %q (must be input or output)", v)
					ok = false
				}
			} else {
				ok = false
			}
			port, pok := p.index(c, m, label, elem, "port-index")
			t.Port = port
			ok = ok && pok
			if v, has := m["format"]; has {
				f, fok := ParseFormat(strings.TrimSpace(v))
				if !fok {
					p.errorf(t.Line, label, elem, "unknown format %q (must be BFYX, BYXF, YXFB, FYXB or ANY)", v)
					ok = false
				}
				t.Format = f
			}
			if iok {
				claim(c, elem, idx)
			}
			if ok {
				k := portKey{t.Kind, t.Port}
				if prev, seen := portFormat[k]; seen && prev.Format != t.Format {
					p.errorf(t.Line, label, elem, "%s port %d is also bound by %s with format %v; a port has one format", t.Kind, t.Port, portElem[k], prev.Format)
				} else if !seen {
					portFormat[k], portElem[k] = t, elem
				}
				l.Tensors = append(l.Tensors, t)
			}
		case isTag(c, "Data"):
			count++
			ndata++
			elem := fmt.Sprintf("Data #%d", ndata)
			m := p.attrs(c, label, elem, "name", "arg-index")
			p.noChildren(c, label, elem)
			d := Data{Line: p.line(c)}
			name, nok := p.required(c, m, label, elem, "name")
			if nok {
				d.Name = strings.TrimSpace(name)
				elem = fmt.Sprintf("Data %q", d.Name)
			}
			idx, iok := p.index(c, m, label, elem, "arg-index")
			d.ArgIndex = idx
			if !iok {
				allOK = false
			} else {
				claim(c, elem, idx)
			}
			if nok && iok {
				l.Data = append(l.Data, d)
			}
		default:
			p.errorf(p.line(c), label, "Buffers", "unexpected element <%s> (expected Tensor or Data)", c.FullTag())
		}
	}
	if ntensor == 0 {
		p.errorf(p.line(e), label, "Buffers", "no <Tensor> element (at least one is required)")
	} else if noutput == 0 && len(l.Tensors) == ntensor {
		p.errorf(p.line(e), label, "Buffers", "no Tensor of type output: the kernel would write nothing")
	}
	if allOK {
		for k := 0; k < count; k++ {
			if _, ok := used[k]; !ok {
				p.errorf(p.line(e), label, "Buffers", "gap in the arg-index sequence: no buffer has arg-index %d (the %d buffers must use 0 to %d)", k, count, count-1)
			}
		}
	}
}
