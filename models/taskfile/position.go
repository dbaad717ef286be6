package taskfile

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// Error is a problem in a task file: the file, the line and column (1-based, in bytes) where
// it is, and what is wrong. A problem inside an expression is located at the character of the
// expression where it is.
type Error struct {
	File      string
	Line, Col int
	Msg       string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg) }

// document is a task file's text with the location of every value in it.
type document struct {
	file string
	text []byte
	// at maps a value's path to where its text starts in the file: "dynamics" (the key),
	// "dynamics[1]" (an element), "param[0]" (an [[param]] header), "param[0].bounds",
	// "constants.g".
	at map[string]span
}

// span is a value's raw text in the file: its byte offset and the text itself (for a string,
// with its quotes).
type span struct {
	offset int
	raw    string
}

// newDocument indexes the values of a TOML document by path with the TOML library's
// parser; a syntax error is returned with its position.
func newDocument(file string, text []byte) (*document, error) {
	d := &document{file: file, text: text, at: map[string]span{}}
	var p unstable.Parser
	p.Reset(text)
	table := ""
	arrays := map[string]int{}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			name, first := keyPath(e.Key())
			if e.Kind == unstable.ArrayTable {
				i := arrays[name]
				arrays[name]++
				name = fmt.Sprintf("%s[%d]", name, i)
			}
			table = name
			d.at[table] = span{int(first.Raw.Offset), string(p.Raw(first.Raw))}
		case unstable.KeyValue:
			name, first := keyPath(e.Key())
			if table != "" {
				name = table + "." + name
			}
			d.at[name] = span{int(first.Raw.Offset), string(p.Raw(first.Raw))}
			d.index(&p, name, e.Value())
		}
	}
	if err := p.Error(); err != nil {
		var pe *unstable.ParserError
		if errors.As(err, &pe) && len(pe.Highlight) > 0 {
			return nil, d.errorAt(p.Range(pe.Highlight).Offset, "%s", pe.Message)
		}
		return nil, &Error{File: file, Line: 1, Col: 1, Msg: err.Error()}
	}
	return d, nil
}

// index records the elements of arrays and inline tables under path, and a scalar's own text
// (replacing its key's position) where the parser gives it.
func (d *document) index(p *unstable.Parser, path string, v *unstable.Node) {
	switch v.Kind {
	case unstable.Array:
		it, i := v.Children(), 0
		for it.Next() {
			if c := it.Node(); c.Kind != unstable.Comment {
				elem := fmt.Sprintf("%s[%d]", path, i)
				d.at[elem] = span{int(c.Raw.Offset), string(p.Raw(c.Raw))}
				d.index(p, elem, c)
				i++
			}
		}
	case unstable.InlineTable:
		it := v.Children()
		for it.Next() {
			if kv := it.Node(); kv.Kind == unstable.KeyValue {
				name, first := keyPath(kv.Key())
				d.at[path+"."+name] = span{int(first.Raw.Offset), string(p.Raw(first.Raw))}
				d.index(p, path+"."+name, kv.Value())
			}
		}
	default:
		if v.Raw.Length > 0 {
			d.at[path] = span{int(v.Raw.Offset), string(p.Raw(v.Raw))}
		}
	}
}

// keyPath returns a dotted key as one string and its first part.
func keyPath(it unstable.Iterator) (string, *unstable.Node) {
	var parts []string
	var first *unstable.Node
	for it.Next() {
		if first == nil {
			first = it.Node()
		}
		parts = append(parts, string(it.Node().Data))
	}
	return strings.Join(parts, "."), first
}

// decode fills v from the document (unknown keys are errors), with the TOML library's
// positions in its errors.
func (d *document) decode(v any) error {
	err := toml.NewDecoder(bytes.NewReader(d.text)).DisallowUnknownFields().Decode(v)
	if err == nil {
		return nil
	}
	var de *toml.DecodeError
	var se *toml.StrictMissingError
	if errors.As(err, &se) && len(se.Errors) > 0 {
		de = &se.Errors[0]
	} else if !errors.As(err, &de) {
		return &Error{File: d.file, Line: 1, Col: 1, Msg: err.Error()}
	}
	line, col := de.Position()
	msg := strings.TrimPrefix(de.Error(), "toml: ")
	if k := de.Key(); len(k) > 0 && !strings.Contains(msg, strings.Join(k, ".")) {
		msg = fmt.Sprintf("%s: %s", strings.Join(k, "."), msg)
	}
	return &Error{File: d.file, Line: line, Col: col, Msg: msg}
}

// errorAt returns an Error at a byte offset of the file.
func (d *document) errorAt(offset uint32, format string, args ...any) *Error {
	line := 1 + bytes.Count(d.text[:offset], []byte("\n"))
	col := int(offset) - bytes.LastIndexByte(d.text[:offset], '\n')
	return &Error{File: d.file, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

// errorf returns an Error at the value of path, or at the start of the file if the path is
// not in it (a missing key).
func (d *document) errorf(path string, format string, args ...any) *Error {
	s, ok := d.at[path]
	if !ok {
		return &Error{File: d.file, Line: 1, Col: 1, Msg: fmt.Sprintf(format, args...)}
	}
	return d.errorAt(uint32(s.offset), format, args...)
}

// has reports whether the file gives the value of path.
func (d *document) has(path string) bool {
	_, ok := d.at[path]
	return ok
}

// offsetIn returns the file offset of byte i of the decoded string value at path: exact when
// the decoded string appears verbatim in the file (no escapes), else the string's start.
func (d *document) offsetIn(path, decoded string, i int) uint32 {
	s := d.at[path]
	if k := strings.Index(s.raw, decoded); k >= 0 && decoded != "" {
		return uint32(s.offset + k + i)
	}
	return uint32(s.offset)
}

// literal returns the raw text of the number at path as an exact Go literal (TOML's
// underscores and leading + removed), or "" if it is not a plain decimal number.
func (d *document) literal(path string) string {
	s := strings.TrimPrefix(strings.ReplaceAll(d.at[path].raw, "_", ""), "+")
	if _, err := strconv.ParseFloat(s, 64); err != nil || strings.ContainsAny(s, "xobXOBin") {
		return ""
	}
	return s
}
