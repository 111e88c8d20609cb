"""A small OpenVINO IR writer for clhost's test fixtures.

It writes the form OpenVINO's serializer produces for IR version 11: <layers> with
numbered ports (a layer's inputs first, its outputs numbered after them), <dim> per
dimension (-1 for a dynamic one), names= on output ports, Const data in the .bin at
offset/size, f16-compressed weights as a Const f16 followed by a Convert marked
"decompression" in its rt_info, and a net-level rt_info the reader must ignore.
"""
import numpy as np
from xml.sax.saxutils import quoteattr

PREC = {np.float32: ("f32", "FP32"), np.float16: ("f16", "FP16"), np.int64: ("i64", "I64"),
        np.int32: ("i32", "I32"), np.int8: ("i8", "I8"), np.uint8: ("u8", "U8"), np.bool_: ("boolean", "BOOL")}


class Port:
    def __init__(self, layer, port, dims, prec):
        self.layer, self.port, self.dims, self.prec = layer, port, list(dims), prec


class IR:
    def __init__(self, name, version=11):
        self.name, self.version = name, version
        self.layers, self.edges, self.bin = [], [], bytearray()

    def _layer(self, typ, name, version, data, ins, outs, rt=None, out_names=None):
        lid = (len(self.layers) * 7919) % 1000 + 1  # ids in no particular order, as after graph edits
        ports_in = []
        for k, p in enumerate(ins):
            ports_in.append((k, p.dims, p.prec))
            self.edges.append((p.layer, p.port, lid, k))
        ports_out, result = [], []
        for j, (dims, prec) in enumerate(outs):
            pid = len(ins) + j
            nm = out_names[j] if out_names and j < len(out_names) else None
            ports_out.append((pid, dims, prec, nm))
            result.append(Port(lid, pid, dims, prec))
        self.layers.append(dict(id=lid, type=typ, name=name, version=version, data=data or {},
                                ins=ports_in, outs=ports_out, rt=rt or []))
        return result

    def param(self, name, dims, prec="FP32"):
        et = {"FP32": "f32"}[prec]
        shape = ",".join("?" if d < 0 else str(d) for d in dims)
        return self._layer("Parameter", name, "opset1", {"shape": shape, "element_type": et}, [],
                           [(dims, prec)], out_names=[name])[0]

    def const(self, name, arr):
        arr = np.array(arr, order="C")  # ascontiguousarray would make a scalar 1-D
        et, prec = PREC[arr.dtype.type]
        off = len(self.bin)
        self.bin += arr.tobytes()
        while len(self.bin) % 8:
            self.bin += b"\0"  # the serializer does not align, but the reader must not care
        data = {"element_type": et, "shape": ", ".join(str(d) for d in arr.shape),
                "offset": str(off), "size": str(arr.nbytes)}
        return self._layer("Const", name, "opset1", data, [], [(list(arr.shape), prec)])[0]

    def weights(self, name, arr, compress=True):
        """A float weight: f16-compressed (Const f16 → Convert f32, decompression) or f32."""
        if not compress:
            return self.const(name, arr.astype(np.float32))
        c = self.const(name + "_compressed", arr.astype(np.float16))
        return self.op("Convert", name, [c], {"destination_type": "f32"}, [c.dims],
                       rt=["decompression"])[0]

    def op(self, typ, name, ins, data, out_dims, version="opset1", prec="FP32", names=None, rt=None):
        outs = [(d, prec) for d in out_dims]
        return self._layer(typ, name, version, {k: str(v) for k, v in data.items()}, ins, outs,
                           rt=rt, out_names=names)

    def result(self, name, p):
        self._layer("Result", name, "opset1", {}, [p], [])

    def xml(self):
        out = ['<?xml version="1.0"?>', '<net name=%s version="%d">' % (quoteattr(self.name), self.version), "\t<layers>"]
        for l in self.layers:
            out.append('\t\t<layer id="%d" name=%s type="%s" version="%s">' % (l["id"], quoteattr(l["name"]), l["type"], l["version"]))
            if l["data"] or l["type"] in ("Parameter", "Const"):
                attrs = " ".join("%s=%s" % (k, quoteattr(v)) for k, v in l["data"].items())
                out.append("\t\t\t<data %s />" % attrs)
            if l["rt"]:
                out.append("\t\t\t<rt_info>")
                for a in l["rt"]:
                    out.append('\t\t\t\t<attribute name="%s" version="0" />' % a)
                out.append("\t\t\t</rt_info>")
            for tag, ports in (("input", l["ins"]), ("output", l["outs"])):
                if not ports:
                    continue
                out.append("\t\t\t<%s>" % tag)
                for p in ports:
                    names = ' names=%s' % quoteattr(p[3].replace(",", "\\,")) if len(p) > 3 and p[3] else ""
                    out.append('\t\t\t\t<port id="%d" precision="%s"%s>' % (p[0], p[2], names))
                    for d in p[1]:
                        out.append("\t\t\t\t\t<dim>%d</dim>" % d)
                    out.append("\t\t\t\t</port>")
                out.append("\t\t\t</%s>" % tag)
            out.append("\t\t</layer>")
        out.append("\t</layers>")
        out.append("\t<edges>")
        for e in self.edges:
            out.append('\t\t<edge from-layer="%d" from-port="%d" to-layer="%d" to-port="%d" />' % e)
        out.append("\t</edges>")
        out.append('\t<rt_info>\n\t\t<MO_version value="clhost-fixture" />\n\t\t<conversion_parameters>\n\t\t\t<compress_to_fp16 value="True" />\n\t\t</conversion_parameters>\n\t</rt_info>')
        out.append("</net>")
        return "\n".join(out) + "\n"

    def save(self, base):
        with open(base + ".xml", "w") as f:
            f.write(self.xml())
        with open(base + ".bin", "wb") as f:
            f.write(bytes(self.bin))
