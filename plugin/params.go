package plugin

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// A call's parameters are read strictly before anyone acts on them: what a
// person is shown, what an approval binds to and what runs must be one
// value, and encoding/json alone does not give that. It matches a key to
// a field ignoring case and lets the last of two equal keys win, so
// {"command":"a","COMMAND":"b"} (or a second key written "\u0063ommand")
// reads as "b" while a reader of the text sees "a". Here such a call is
// refused with one sentence: a key given twice at any depth (compared
// after unescaping), a parameter named in another case than the action
// declares it, a field the action does not take. What is accepted is
// re-encoded canonically (keys sorted, no HTML escaping, so "a > b &&
// c" reads as written), and that text is what is shown, bound to and run.

// maxParamsDepth is how deeply parameters may nest; no action declares
// anything near it, and it bounds the scanner's recursion.
const maxParamsDepth = 64

// ParamsError is a call's parameters refused by DecodeParams or
// DecodeStrict; its text is one sentence for whoever sent them.
type ParamsError struct{ Reason string }

func (e *ParamsError) Error() string { return e.Reason }

func refuseParams(format string, args ...any) error {
	return &ParamsError{Reason: fmt.Sprintf(format, args...)}
}

// DecodeParams reads raw, a call's parameters, strictly against the
// action's declared Parameters schema and returns them re-encoded
// canonically (CanonicalJSON). Wherever the schema lists an object's
// properties, a key it does not list is refused unless the schema allows
// additional properties; a schema that lists none (free-form, as
// {"type":"object"}) takes any keys. A key given twice is refused at any
// depth. Types and ranges are the action's to check when it decodes.
func (i ActionInfo) DecodeParams(raw json.RawMessage) (json.RawMessage, error) {
	v, err := scanParams(raw)
	if err != nil {
		return nil, err
	}
	var s map[string]any
	if len(bytes.TrimSpace(i.Parameters)) > 0 && json.Unmarshal(i.Parameters, &s) != nil {
		s = nil // an undecodable schema declares nothing
	}
	if err := checkKeys(v, schemaShape(s, 0), ""); err != nil {
		return nil, err
	}
	return CanonicalJSON(v)
}

// DecodeStrict decodes raw, a call's parameters, into v (a pointer) as
// strictly as DecodeParams, the names being v's JSON field names: a key
// given twice, one naming a field in another case, one v has no field
// for are each refused with a *ParamsError.
func DecodeStrict(raw json.RawMessage, v any) error {
	tree, err := scanParams(raw)
	if err != nil {
		return err
	}
	if err := checkKeys(tree, typeShape(reflect.TypeOf(v), map[reflect.Type]*shape{}), ""); err != nil {
		return err
	}
	canon, err := CanonicalJSON(tree)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(canon))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return refuseParams("The parameters are not valid: %v.", strings.TrimSuffix(err.Error(), "."))
	}
	return nil
}

// CanonicalJSON encodes v, a value as scanParams reads it, as parameters
// are stored and shown: object keys sorted, numbers as they were written,
// no HTML escaping ("<", ">" and "&" are themselves), no trailing newline.
func CanonicalJSON(v any) (json.RawMessage, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode parameters: %w", err)
	}
	return json.RawMessage(bytes.TrimRight(b.Bytes(), "\n")), nil
}

// scanParams reads raw, which must be one JSON object (empty is {}), into
// maps, slices and scalars (numbers as json.Number), refusing a key given
// twice in one object at any depth.
func scanParams(raw json.RawMessage) (any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	v, err := scanValue(dec, "", 0)
	if err != nil {
		return nil, err
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, refuseParams("The parameters are not valid: they are not a JSON object.")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, refuseParams("The parameters are not valid: something follows their JSON object.")
	}
	return v, nil
}

func scanValue(dec *json.Decoder, path string, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, notJSON(err)
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil // a string, json.Number, bool or nil
	}
	if depth >= maxParamsDepth {
		return nil, refuseParams("The parameters nest more than %d levels deep.", maxParamsDepth)
	}
	switch d {
	case '{':
		obj := map[string]any{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return nil, notJSON(err)
			}
			key, _ := tok.(string) // the decoder gives an object's keys as strings, unescaped
			at := join(path, key)
			if _, dup := obj[key]; dup {
				return nil, refuseParams("The key %s is given twice (keys are compared after unescaping); give each key once.", strconv.Quote(at))
			}
			if obj[key], err = scanValue(dec, at, depth+1); err != nil {
				return nil, err
			}
		}
		if _, err := dec.Token(); err != nil { // '}'
			return nil, notJSON(err)
		}
		return obj, nil
	case '[':
		arr := []any{}
		for dec.More() {
			v, err := scanValue(dec, path+"["+strconv.Itoa(len(arr))+"]", depth+1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		if _, err := dec.Token(); err != nil { // ']'
			return nil, notJSON(err)
		}
		return arr, nil
	}
	return nil, refuseParams("The parameters are not valid JSON.")
}

func notJSON(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return refuseParams("The parameters are not valid JSON: they end too soon.")
	}
	return refuseParams("The parameters are not valid JSON: %s.", strings.TrimSuffix(err.Error(), "."))
}

// join is the name a refusal gives the key at path: "opts.mode",
// "items[2].name", or the key alone at the top.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// shape is which keys an object may have at one place of a call's
// parameters; nil takes anything.
type shape struct {
	object bool              // the place holds an object whose keys are fields
	fields map[string]*shape // its fields, exactly as spelled, and their values' shapes
	open   bool              // other keys are taken too
	items  *shape            // the shape of an array's elements
}

// names lists s's fields for a refusal.
func (s *shape) names() string {
	if len(s.fields) == 0 {
		return "it takes none"
	}
	names := make([]string, 0, len(s.fields))
	for n := range s.fields {
		names = append(names, n)
	}
	slices.Sort(names)
	return "it takes " + strings.Join(names, ", ")
}

// checkKeys refuses the first key of v (in sorted order, depth first) that
// s does not take.
func checkKeys(v any, s *shape, path string) error {
	if s == nil {
		return nil
	}
	switch v := v.(type) {
	case map[string]any:
		if !s.object {
			return nil
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			at := join(path, k)
			child, ok := s.fields[k]
			if ok {
				if err := checkKeys(v[k], child, at); err != nil {
					return err
				}
				continue
			}
			// A key in another case than a field's is refused even where
			// other keys are taken: encoding/json would fold it onto the
			// field.
			for name := range s.fields {
				if strings.EqualFold(name, k) {
					return refuseParams("The key %s is spelled %s; names are case-sensitive.", strconv.Quote(at), strconv.Quote(join(path, name)))
				}
			}
			if !s.open {
				where := "There is no parameter " + strconv.Quote(at)
				if path != "" {
					where = "There is no key " + strconv.Quote(k) + " in " + strconv.Quote(path)
				}
				return refuseParams("%s; %s.", where, s.names())
			}
		}
	case []any:
		for i, e := range v {
			if err := checkKeys(e, s.items, path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	}
	return nil
}

// schemaShape is the shape a JSON Schema declares: the properties of an
// object that lists them (closed unless additionalProperties or
// patternProperties allows more), the items of an array. A schema that
// composes others (allOf, anyOf, oneOf, $ref) is taken as free-form:
// refusing what it might allow would be a guess.
func schemaShape(s map[string]any, depth int) *shape {
	if s == nil || depth > maxParamsDepth {
		return nil
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf", "$ref", "not", "if"} {
		if _, ok := s[k]; ok {
			return nil
		}
	}
	out := &shape{}
	if props, ok := s["properties"].(map[string]any); ok {
		out.object, out.fields = true, make(map[string]*shape, len(props))
		for name, sub := range props {
			sub, _ := sub.(map[string]any)
			out.fields[name] = schemaShape(sub, depth+1)
		}
		add, has := s["additionalProperties"]
		_, pattern := s["patternProperties"]
		out.open = pattern || (has && add != false)
	}
	if items, ok := s["items"].(map[string]any); ok {
		out.items = schemaShape(items, depth+1)
	}
	if !out.object && out.items == nil {
		return nil
	}
	return out
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// typeShape is the shape encoding/json decodes t from: a struct's fields
// by their JSON names (embedded structs' fields promoted), a slice's or
// array's elements. A type that decodes itself, a map and an interface
// take anything.
func typeShape(t reflect.Type, seen map[reflect.Type]*shape) *shape {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return nil
	}
	if s, ok := seen[t]; ok {
		return s
	}
	pt := reflect.PointerTo(t)
	if t.Implements(jsonUnmarshaler) || pt.Implements(jsonUnmarshaler) || pt.Implements(textUnmarshaler) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		s := &shape{object: true, fields: map[string]*shape{}}
		seen[t] = s
		addFields(s, t, seen)
		return s
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil // []byte is a base64 string
		}
		s := &shape{}
		seen[t] = s
		s.items = typeShape(t.Elem(), seen)
		if s.items == nil {
			return nil
		}
		return s
	}
	return nil
}

func addFields(s *shape, t reflect.Type, seen map[reflect.Type]*shape) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			addFields(s, ft, seen) // promoted, as encoding/json does
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		s.fields[name] = typeShape(f.Type, seen)
	}
}
