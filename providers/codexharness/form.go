// MCP form elicitations: the requested schema as questions, and the answers
// back as the typed content the schema asks for.

package codexharness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// formField is one property of an elicitation's requestedSchema.
type formField struct {
	key         string
	typ         string // "string", "number", "integer", "boolean" or "array"
	title, desc string
	labels      []string // the choices shown
	values      []string // the value sent for each label, same order
	multi       bool     // an array of choices
	required    bool
}

// fieldSchema is the part of an MCP primitive schema the form reads.
type fieldSchema struct {
	Type        string        `json:"type"`
	Title       string        `json:"title"`
	Description string        `json:"description"`
	Enum        []string      `json:"enum"`
	EnumNames   []string      `json:"enumNames"`
	OneOf       []constOption `json:"oneOf"`
	AnyOf       []constOption `json:"anyOf"`
	Items       *struct {
		Enum  []string      `json:"enum"`
		AnyOf []constOption `json:"anyOf"`
	} `json:"items"`
}

type constOption struct {
	Const string `json:"const"`
	Title string `json:"title"`
}

// formFields reads the schema's properties in the order the server wrote
// them. A schema that is not an object of properties has no fields.
func formFields(schema json.RawMessage) []formField {
	var top struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if json.Unmarshal(schema, &top) != nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(top.Properties))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var out []formField
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return out
		}
		var fs fieldSchema
		if err := dec.Decode(&fs); err != nil {
			return out
		}
		f := formField{key: key, typ: fs.Type, title: fs.Title, desc: fs.Description}
		for _, r := range top.Required {
			f.required = f.required || r == key
		}
		switch {
		case len(fs.OneOf) > 0:
			f.choices(fs.OneOf)
		case len(fs.AnyOf) > 0:
			f.choices(fs.AnyOf)
		case len(fs.Enum) > 0:
			f.values = fs.Enum
			f.labels = fs.Enum
			if len(fs.EnumNames) == len(fs.Enum) {
				f.labels = fs.EnumNames
			}
		case fs.Type == "array" && fs.Items != nil:
			f.multi = true
			if len(fs.Items.AnyOf) > 0 {
				f.choices(fs.Items.AnyOf)
			} else {
				f.values, f.labels = fs.Items.Enum, fs.Items.Enum
			}
		case fs.Type == "boolean":
			f.labels, f.values = []string{"Yes", "No"}, []string{"true", "false"}
		}
		out = append(out, f)
	}
	return out
}

func (f *formField) choices(opts []constOption) {
	for _, o := range opts {
		label := o.Title
		if label == "" {
			label = o.Const
		}
		f.labels = append(f.labels, label)
		f.values = append(f.values, o.Const)
	}
}

// question is the field as a form question.
func (f *formField) question() agent.Question {
	header, text := f.header(), f.desc
	if text == "" {
		header, text = "", header
	}
	switch f.typ {
	case "integer":
		text += " (a whole number)"
	case "number":
		text += " (a number)"
	}
	return agent.Question{ID: f.key, Header: header, Text: text, Options: f.labels, MultiSelect: f.multi, Optional: !f.required}
}

// formContent builds an elicitation's content from the answers, typed by the
// form's schema; a raw JSON object under AnswerJSON wins. A missing required
// field or a value the field cannot take is ErrBadAnswer.
func formContent(form []formField, answers map[string]string) (json.RawMessage, error) {
	if raw, ok := answers[AnswerJSON]; ok {
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(raw), &obj) != nil || obj == nil {
			return nil, fmt.Errorf("%w: elicitation content must be a JSON object", ErrBadAnswer)
		}
		return json.RawMessage(raw), nil
	}
	content := map[string]any{}
	for i := range form {
		f := &form[i]
		a := answers[f.key]
		if strings.TrimSpace(a) == "" {
			if f.required {
				return nil, fmt.Errorf("%w: %q is required", ErrBadAnswer, f.header())
			}
			continue
		}
		v, err := f.value(a)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %w", ErrBadAnswer, f.header(), err)
		}
		content[f.key] = v
	}
	b, _ := json.Marshal(content)
	return b, nil
}

func (f *formField) header() string {
	if f.title != "" {
		return f.title
	}
	return f.key
}

// value converts one answer to the field's JSON value.
func (f *formField) value(a string) (any, error) {
	if f.multi {
		parts := strings.Split(a, "\n")
		if len(parts) == 1 {
			parts = strings.Split(a, ",")
		}
		out := []string{}
		for _, p := range parts {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			v, err := f.choice(p)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	}
	t := strings.TrimSpace(a)
	switch f.typ {
	case "boolean":
		switch strings.ToLower(t) {
		case "true", "yes", "y", "1":
			return true, nil
		case "false", "no", "n", "0":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not yes or no", t)
	case "integer":
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a whole number", t)
		}
		return n, nil
	case "number":
		n, err := strconv.ParseFloat(t, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", t)
		}
		return n, nil
	}
	if len(f.values) > 0 {
		return f.choice(t)
	}
	return a, nil
}

// choice maps a label (or a value) to the value sent.
func (f *formField) choice(a string) (string, error) {
	for i, l := range f.labels {
		if strings.EqualFold(l, a) || strings.EqualFold(f.values[i], a) {
			return f.values[i], nil
		}
	}
	return "", fmt.Errorf("%q is not one of %s", a, strings.Join(f.labels, ", "))
}
