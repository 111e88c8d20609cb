package serve

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/clhost/clhost/customlayer"
)

// A model repository is often filled by someone other than the operator (a storage
// initializer, a model author's upload). Whatever a repository model reads — its
// model file, its folder's configurations and every kernel source they name — must lie
// inside its folder once symlinks are resolved: otherwise a configuration's
// <Source filename="../../etc/passwd"/> would have the server read, compile and quote
// in its errors any file it can read. This is checked before anything is read.

// confined checks that the model file (an IR's weights too) and the configurations of
// its folder, with the kernel sources they name, lie inside folder; the error names the
// configuration's file and line.
func confined(folder, modelPath string, xmls []string) error {
	root, err := filepath.EvalSymlinks(folder)
	if err != nil {
		return fmt.Errorf("model folder %s: %w", folder, err)
	}
	if root, err = filepath.Abs(root); err != nil {
		return fmt.Errorf("model folder %s: %w", folder, err)
	}
	if where, ok := resolvedInside(root, modelPath); !ok {
		return fmt.Errorf("model file %s is %s, outside the model's folder %s", modelPath, where, root)
	}
	if bin := besideWeights(modelPath); bin != "" {
		if where, ok := resolvedInside(root, bin); !ok {
			return fmt.Errorf("weights file %s is %s, outside the model's folder %s", bin, where, root)
		}
	}
	for _, x := range xmls {
		if where, ok := resolvedInside(root, x); !ok {
			return fmt.Errorf("configuration %s is %s, outside the model's folder %s", x, where, root)
		}
		// A configuration that cannot be read or parsed fails its load with the reason;
		// the sources found before the fault are checked all the same.
		refs, _ := kernelSources(x)
		for _, ref := range refs {
			p := ref.filename
			if !filepath.IsAbs(p) {
				p = filepath.Join(filepath.Dir(x), p)
			}
			if where, ok := resolvedInside(root, p); !ok {
				return fmt.Errorf("%s:%d: <Source filename=%q> is %s, outside the model's folder %s: a repository model's kernel sources must lie inside its folder", x, ref.line, ref.filename, where, root)
			}
		}
		if err := confinedIncludes(root, x); err != nil {
			return err
		}
	}
	return nil
}

// confinedIncludes checks the headers that the sources of configuration x include: they
// become part of the program (customlayer's include.go), so they too must lie inside
// root. The sources are known to lie inside by then.
func confinedIncludes(root, x string) error {
	layers, err := customlayer.Load(x)
	if err != nil {
		return nil // the model's load reports it
	}
	for _, l := range layers {
		for _, s := range l.Sources {
			for _, h := range s.Includes {
				if where, ok := resolvedInside(root, h); !ok {
					return fmt.Errorf("%s:%d: <Source filename=%q> includes %s, which is %s, outside the model's folder %s: a repository model's kernel headers must lie inside its folder", x, s.Line, s.Filename, h, where, root)
				}
			}
		}
	}
	return nil
}

// resolvedInside reports whether p, its symlinks resolved, lies inside root (itself
// resolved), and where p resolves to. A path that does not exist is judged by its
// resolved parent and its name: loading it fails anyway, but not by reading elsewhere.
func resolvedInside(root, p string) (string, bool) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return p, false
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		dir, rerr := filepath.EvalSymlinks(filepath.Dir(abs))
		if rerr != nil {
			dir = filepath.Dir(abs)
		}
		resolved = filepath.Join(dir, filepath.Base(abs))
	}
	rel, err := filepath.Rel(root, resolved)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return resolved, false
	}
	return resolved, true
}

// sourceRef is a <Source filename=...> of a configuration and its line.
type sourceRef struct {
	filename string
	line     int
}

// kernelSources lists every <Source filename=...> element of a configuration file,
// wherever it stands (a superset of those the configuration's parser reads).
func kernelSources(path string) ([]sourceRef, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, customlayer.MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	var refs []sourceRef
	for {
		line, _ := dec.InputPos()
		tok, err := dec.Token()
		if err == io.EOF {
			return refs, nil
		}
		if err != nil {
			return refs, err
		}
		se, ok := tok.(xml.StartElement)
		if !ok || se.Name.Local != "Source" {
			continue
		}
		for _, a := range se.Attr {
			if a.Name.Local == "filename" {
				refs = append(refs, sourceRef{filename: a.Value, line: line})
			}
		}
	}
}
