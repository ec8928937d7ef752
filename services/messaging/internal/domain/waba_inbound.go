package domain

import "math"

// What a person sends on the business channel, checked and put in one
// shape (every key present, null where absent), so messages and events
// show them alike whichever provider delivered them.

// ParseOrder checks a waba_order content (spec 2.7: currency, amount,
// items of {name, price, quantity, image_url, retailer_id}, comment,
// catalog_id), collecting the refused values located under at.
func ParseOrder(raw map[string]any, at ...any) (map[string]any, error) {
	c := &checker{}
	c.known(raw, at, "currency", "amount", "items", "comment", "catalog_id")
	currency, _ := c.str(raw, at, "currency", true, 3)
	amount, _ := c.number(raw, at, "amount", true)
	comment, hasComment := c.str(raw, at, "comment", false, 4096)
	catalog, hasCatalog := c.str(raw, at, "catalog_id", false, 255)
	var items []any
	if list, ok := c.list(raw, at, "items", true); ok {
		if len(list) == 0 {
			c.fail(at, "items", "too_short", "List should have at least 1 item")
		}
		itemsAt := pathTo(at, "items")
		for i, v := range list {
			obj, ok := v.(map[string]any)
			if !ok {
				c.fail(itemsAt, i, "dict_type", "Input should be a valid dictionary or object")
				continue
			}
			ia := pathTo(itemsAt, i)
			c.known(obj, ia, "name", "price", "quantity", "image_url", "retailer_id")
			name, _ := c.str(obj, ia, "name", true, 1024)
			price, _ := c.number(obj, ia, "price", true)
			qty, ok := c.number(obj, ia, "quantity", true)
			if ok && (qty < 1 || qty != math.Trunc(qty)) {
				c.fail(ia, "quantity", "int_type", "Input should be a whole number of at least 1")
			}
			image, hasImage := c.str(obj, ia, "image_url", false, 2048)
			retailer, hasRetailer := c.str(obj, ia, "retailer_id", false, 255)
			items = append(items, map[string]any{
				"name": name, "price": price, "quantity": int64(qty),
				"image_url": orNil(image, hasImage), "retailer_id": orNil(retailer, hasRetailer),
			})
		}
	}
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	return map[string]any{
		"currency": currency, "amount": amount, "items": items,
		"comment": orNil(comment, hasComment), "catalog_id": orNil(catalog, hasCatalog),
	}, nil
}

// ParseInteractiveReply checks a person's answer to an interactive message
// ({type: button_reply, button_reply: {id, title}} or {type: list_reply,
// list_reply: {id, title, description?}}), collecting the refused values
// located under at.
func ParseInteractiveReply(raw map[string]any, at ...any) (map[string]any, error) {
	c := &checker{}
	c.known(raw, at, "type", "button_reply", "list_reply")
	typ, ok := c.str(raw, at, "type", true, 0)
	if ok && typ != "button_reply" && typ != "list_reply" {
		c.fail(at, "type", "enum", "Input should be 'button_reply' or 'list_reply'")
	}
	out := map[string]any{"type": typ, "button_reply": nil, "list_reply": nil}
	for _, kind := range []string{"button_reply", "list_reply"} {
		if kind != typ {
			c.absent(raw, at, kind, "only the reply named by type is given")
			continue
		}
		obj, ok := c.object(raw, at, kind, true)
		if !ok {
			continue
		}
		ra := pathTo(at, kind)
		reply := map[string]any{}
		if kind == "list_reply" {
			c.known(obj, ra, "id", "title", "description")
			d, has := c.str(obj, ra, "description", false, MaxListRowDescription)
			reply["description"] = orNil(d, has)
		} else {
			c.known(obj, ra, "id", "title")
		}
		reply["id"], _ = c.str(obj, ra, "id", true, MaxTemplateButtonID)
		reply["title"], _ = c.str(obj, ra, "title", true, 0)
		out[kind] = reply
	}
	if len(c.errs) > 0 {
		return nil, c.errs
	}
	return out, nil
}

// MaxListRowDescription is the longest description of a list row.
const MaxListRowDescription = 72

// number reads obj[key] as a number ≥ 0; ok is false when it is absent
// or null (refused when required) or refused.
func (c *checker) number(obj map[string]any, at []any, key string, required bool) (float64, bool) {
	v, present := obj[key]
	if !present || v == nil {
		if required {
			c.fail(at, key, "missing", "Field required")
		}
		return 0, false
	}
	f, ok := v.(float64)
	switch {
	case !ok:
		c.fail(at, key, "float_type", "Input should be a valid number")
	case f < 0:
		c.fail(at, key, "greater_than_equal", "Input should be greater than or equal to 0")
	default:
		return f, true
	}
	return 0, false
}

// list reads obj[key] as an array; ok is false when it is absent or null
// (refused when required) or not an array.
func (c *checker) list(obj map[string]any, at []any, key string, required bool) ([]any, bool) {
	v, present := obj[key]
	if !present || v == nil {
		if required {
			c.fail(at, key, "missing", "Field required")
		}
		return nil, false
	}
	l, ok := v.([]any)
	if !ok {
		c.fail(at, key, "list_type", "Input should be a valid list")
	}
	return l, ok
}

func orNil(s string, ok bool) any {
	if !ok {
		return nil
	}
	return s
}
