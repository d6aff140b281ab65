package slackfake

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// maxViewBytes is the size above which Slack answers view_too_large.
const maxViewBytes = 250 << 10

// trigger is a trigger_id the fake handed out with an interaction: it
// opens one view, within TriggerLifetime, for the person who acted.
type trigger struct {
	user   string
	issued time.Time
	used   bool
}

// triggerLocked hands out a fresh trigger ID for user, as Slack does with
// every slash command, button press and view submission.
func (s *Server) triggerLocked(user string) string {
	id := fmt.Sprintf("%d.%d.%x", s.nextLocked(), s.tsBase, s.seq*2654435761%1_000_000_007)
	s.triggers[id] = &trigger{user: user, issued: s.cfg.now()}
	return id
}

// View is a modal or Home tab the app opened or published.
type View struct {
	ID              string
	Type            string // "modal" or "home"
	UserID          string // whose it is
	CallbackID      string
	PrivateMetadata string
	ExternalID      string
	Title           string // a modal's title, submit and close texts
	Submit          string
	Close           string
	Blocks          []Block
	Hash            string
	// Open is whether a modal is still on the person's screen: until a
	// submission is answered with nothing or "clear".
	Open bool
	// Publishes counts views.publish calls for a Home tab.
	Publishes int
	// wire is the view as the app sent it (type, title, blocks, …).
	wire map[string]any
}

func (v *View) clone() View {
	c := *v
	c.Blocks = slices.Clone(v.Blocks)
	c.wire = maps.Clone(v.wire)
	return c
}

// Buttons lists the view's buttons in order.
func (v View) Buttons() []Button { return Message{Blocks: v.Blocks}.Buttons() }

// Texts lists the texts of the view's section, header and context blocks.
func (v View) Texts() []string {
	var out []string
	for _, b := range v.Blocks {
		if (b.Type == "section" || b.Type == "header") && b.Text != nil {
			out = append(out, b.Text.Text)
		}
		if b.Type == "context" {
			for _, e := range b.Elements {
				if e.Content != "" {
					out = append(out, e.Content)
				}
			}
		}
	}
	return out
}

// Input returns the input block with blockID.
func (v View) Input(blockID string) (Block, bool) {
	for _, b := range v.Blocks {
		if b.Type == "input" && b.BlockID == blockID {
			return b, true
		}
	}
	return Block{}, false
}

// viewFromParamsLocked reads and checks a view as views.open and
// views.publish take it: JSON of the right type, at most 250 KB and 100
// blocks, each block as a message's are checked plus input blocks; a
// modal's title (plain text, 1–24 characters) and, when it has an input
// block, its submit button; private_metadata at most 3000 characters and
// callback_id at most 255.
func (s *Server) viewFromParamsLocked(raw, wantType string) (*View, apiResult) {
	if raw == "" {
		return nil, invalid("missing required field: view")
	}
	if len(raw) > maxViewBytes {
		return nil, fail("view_too_large")
	}
	var wire map[string]any
	var in struct {
		Type            string          `json:"type"`
		Title           *Text           `json:"title"`
		Submit          *Text           `json:"submit"`
		Close           *Text           `json:"close"`
		Blocks          json.RawMessage `json:"blocks"`
		PrivateMetadata string          `json:"private_metadata"`
		CallbackID      string          `json:"callback_id"`
		ExternalID      string          `json:"external_id"`
	}
	if json.Unmarshal([]byte(raw), &wire) != nil || json.Unmarshal([]byte(raw), &in) != nil {
		return nil, invalid("view is not a JSON object")
	}
	if in.Type != wantType {
		return nil, invalid("view type %q; this method takes %q", in.Type, wantType)
	}
	var blocks []Block
	if err := json.Unmarshal(in.Blocks, &blocks); err != nil {
		return nil, invalid("blocks: %v", err)
	}
	if err := checkBlocks(blocks, MaxViewBlocks); err != nil {
		return nil, invalid("%v", err)
	}
	hasInput := slices.ContainsFunc(blocks, func(b Block) bool { return b.Type == "input" })
	title := func(name string, t *Text, required bool) (string, apiResult) {
		switch {
		case t == nil && required:
			return "", invalid("must provide %s", name)
		case t == nil:
			return "", apiResult{}
		case t.Type != "plain_text" || t.Text == "":
			return "", invalid("%s must be plain_text", name)
		case utf8.RuneCountInString(t.Text) > MaxViewTitle:
			return "", invalid("%s must be at most %d characters", name, MaxViewTitle)
		}
		return t.Text, apiResult{}
	}
	v := &View{Type: in.Type, Blocks: blocks, PrivateMetadata: in.PrivateMetadata, CallbackID: in.CallbackID,
		ExternalID: in.ExternalID, wire: wire}
	if in.Type == "modal" {
		var res apiResult
		if v.Title, res = title("title", in.Title, true); res.err != "" {
			return nil, res
		}
		if v.Submit, res = title("submit", in.Submit, hasInput); res.err != "" {
			if in.Submit == nil {
				return nil, invalid("must define submit to use input block")
			}
			return nil, res
		}
		if v.Close, res = title("close", in.Close, false); res.err != "" {
			return nil, res
		}
	}
	if n := utf8.RuneCountInString(in.PrivateMetadata); n > MaxPrivateMetadata {
		return nil, invalid("private_metadata is %d characters; at most %d", n, MaxPrivateMetadata)
	}
	if len(in.CallbackID) > MaxIDLength {
		return nil, invalid("callback_id longer than %d", MaxIDLength)
	}
	return v, apiResult{}
}

// viewsOpenLocked answers views.open: the trigger must be one the fake
// handed out, not used before and at most TriggerLifetime old
// (invalid_trigger_id, exchanged_trigger_id, expired_trigger_id); the view
// must pass viewFromParamsLocked. The modal opens for the person whose
// trigger it was.
func (s *Server) viewsOpenLocked(p url.Values) apiResult {
	id := p.Get("trigger_id")
	if id == "" && p.Get("interactivity_pointer") == "" {
		return invalid("missing required field: trigger_id")
	}
	tr, found := s.triggers[id]
	switch {
	case !found:
		return fail("invalid_trigger_id")
	case tr.used:
		return fail("exchanged_trigger_id")
	case s.cfg.now().Sub(tr.issued) > TriggerLifetime:
		return fail("expired_trigger_id")
	}
	v, res := s.viewFromParamsLocked(p.Get("view"), "modal")
	if res.err != "" {
		return res
	}
	tr.used = true
	v.ID = fmt.Sprintf("V%08d", s.nextLocked())
	v.UserID, v.Open = tr.user, true
	v.Hash = fmt.Sprintf("%d.%08x", s.cfg.now().Unix(), s.seq)
	s.views[v.ID] = v
	return ok(map[string]any{"view": s.wireView(v, map[string]any{})})
}

// viewsPublishLocked answers views.publish: the Home tab must be enabled
// (not_enabled), user_id a member (invalid_arguments), the view a "home"
// one, and a hash, when given, the Home tab's current one (hash_conflict).
// A person's Home tab keeps its view ID across publishes; its hash changes.
func (s *Server) viewsPublishLocked(p url.Values) apiResult {
	if s.cfg.noHomeTab {
		return fail("not_enabled")
	}
	user := p.Get("user_id")
	if _, known := s.users[user]; !known || user == "" {
		return invalid("invalid `user_id`")
	}
	v, res := s.viewFromParamsLocked(p.Get("view"), "home")
	if res.err != "" {
		return res
	}
	cur := s.views[s.homes[user]]
	if h := p.Get("hash"); h != "" && (cur == nil || cur.Hash != h) {
		return fail("hash_conflict")
	}
	v.UserID = user
	if cur != nil {
		v.ID, v.Publishes = cur.ID, cur.Publishes
	} else {
		v.ID = fmt.Sprintf("V%08d", s.nextLocked())
	}
	v.Publishes++
	v.Hash = fmt.Sprintf("%d.%08x", s.cfg.now().Unix(), s.nextLocked())
	s.views[v.ID] = v
	s.homes[user] = v.ID
	return ok(map[string]any{"view": s.wireView(v, map[string]any{})})
}

// wireView is a view as Slack returns and sends it, with state values.
func (s *Server) wireView(v *View, values map[string]any) map[string]any {
	out := maps.Clone(v.wire)
	maps.Copy(out, map[string]any{
		"id": v.ID, "team_id": s.cfg.teamID, "type": v.Type, "private_metadata": v.PrivateMetadata,
		"callback_id": v.CallbackID, "external_id": v.ExternalID, "hash": v.Hash,
		"state":          map[string]any{"values": values},
		"clear_on_close": false, "notify_on_close": false, "root_view_id": v.ID, "previous_view_id": nil,
		"app_id": s.cfg.appID, "app_installed_team_id": s.cfg.teamID, "bot_id": s.cfg.botID,
	})
	return out
}

// ViewByID returns a view the app opened or published.
func (s *Server) ViewByID(id string) (View, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, found := s.views[id]
	if !found {
		return View{}, false
	}
	return v.clone(), true
}

// HomeView returns user's Home tab as last published.
func (s *Server) HomeView(user string) (View, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, found := s.views[s.homes[user]]
	if !found {
		return View{}, false
	}
	return v.clone(), true
}

// OpenModals lists the modals open on user's screen, oldest first.
func (s *Server) OpenModals(user string) []View {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []View
	for _, v := range s.views {
		if v.Type == "modal" && v.Open && v.UserID == user {
			out = append(out, v.clone())
		}
	}
	slices.SortFunc(out, func(a, b View) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// ViewSubmission is a view_submission interaction: a person submitted a
// modal. Values is the view's state as Slack sends it: block ID → action
// ID → the element's value object. SubmitView builds one the way Slack's
// client would let it be sent; a test may change Values after, to play a
// client that checks less.
type ViewSubmission struct {
	TeamID    string
	UserID    string
	UserName  string
	TriggerID string
	APIAppID  string
	View      View
	Values    map[string]map[string]any

	wire map[string]any // the view as Slack sends it, without state
}

var _ Payload = ViewSubmission{}

func (ViewSubmission) envelopeType() string { return EnvelopeInteractive }
func (ViewSubmission) path() string         { return "/slack/interactions" }

// JSON is the view_submission payload as Slack sends it.
func (v ViewSubmission) JSON() ([]byte, error) {
	view := maps.Clone(v.wire)
	values := map[string]any{}
	for b, as := range v.Values {
		values[b] = as
	}
	view["state"] = map[string]any{"values": values}
	return json.Marshal(map[string]any{
		"type": "view_submission", "token": "deprecated-verification-token", "api_app_id": v.APIAppID,
		"team":       map[string]any{"id": v.TeamID, "domain": "fake"},
		"user":       map[string]any{"id": v.UserID, "username": v.UserName, "name": v.UserName, "team_id": v.TeamID},
		"trigger_id": v.TriggerID, "view": view, "response_urls": []any{},
		"is_enterprise_install": false, "enterprise": nil,
	})
}

func (v ViewSubmission) httpBody() (string, []byte, error) {
	b, err := v.JSON()
	if err != nil {
		return "", nil, err
	}
	return "application/x-www-form-urlencoded", []byte(url.Values{"payload": {string(b)}}.Encode()), nil
}

func (v ViewSubmission) socketPayload() (json.RawMessage, error) { return v.JSON() }

// SubmitView is user submitting their open modal viewID with values (input
// block ID → what they typed or, for a select, the option's value). As
// Slack's client does, it refuses to send what the view's elements do not
// allow: a required input left empty, a text outside min_length and
// max_length, a number that is not one, has decimals it may not have or is
// out of bounds, a value that is not one of a select's options.
func (s *Server) SubmitView(user, viewID string, values map[string]string) (ViewSubmission, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, found := s.views[viewID]
	switch {
	case !found || v.Type != "modal":
		return ViewSubmission{}, fmt.Errorf("no modal %s", viewID)
	case !v.Open:
		return ViewSubmission{}, fmt.Errorf("modal %s is closed", viewID)
	case v.UserID != user:
		return ViewSubmission{}, fmt.Errorf("modal %s is %s's, not %s's", viewID, v.UserID, user)
	}
	state := map[string]map[string]any{}
	used := map[string]bool{}
	for _, b := range v.Blocks {
		if b.Type != "input" {
			continue
		}
		typed, given := values[b.BlockID]
		used[b.BlockID] = given
		val, err := inputValue(b, typed)
		if err != nil {
			return ViewSubmission{}, fmt.Errorf("input %s: %w", b.BlockID, err)
		}
		state[b.BlockID] = map[string]any{b.Element.ActionID: val}
	}
	for id := range values {
		if !used[id] {
			return ViewSubmission{}, fmt.Errorf("modal %s has no input %q", viewID, id)
		}
	}
	u := s.userLocked(user)
	return ViewSubmission{
		TeamID: s.cfg.teamID, UserID: user, UserName: u.Name, TriggerID: s.triggerLocked(user),
		APIAppID: s.cfg.appID, View: v.clone(), Values: state, wire: s.wireView(v, nil),
	}, nil
}

// inputValue is an input element's value object in a view's state, for
// what the person typed; an error when Slack's client would not send it.
func inputValue(b Block, typed string) (map[string]any, error) {
	e := b.Element
	if typed == "" && !b.Optional {
		return nil, fmt.Errorf("required")
	}
	switch e.Type {
	case "plain_text_input":
		if typed == "" {
			return map[string]any{"type": e.Type, "value": nil}, nil
		}
		n := utf8.RuneCountInString(typed)
		if e.MaxLength != nil && n > *e.MaxLength {
			return nil, fmt.Errorf("%d characters; at most %d", n, *e.MaxLength)
		}
		if e.MinLength != nil && n < *e.MinLength {
			return nil, fmt.Errorf("%d characters; at least %d", n, *e.MinLength)
		}
		return map[string]any{"type": e.Type, "value": typed}, nil
	case "static_select":
		if typed == "" {
			return map[string]any{"type": e.Type, "selected_option": nil}, nil
		}
		o := e.option(typed)
		if o == nil {
			return nil, fmt.Errorf("%q is not an option", typed)
		}
		return map[string]any{"type": e.Type, "selected_option": map[string]any{"text": o.Text, "value": o.Value}}, nil
	case "number_input":
		if typed == "" {
			return map[string]any{"type": e.Type, "value": nil}, nil
		}
		n, err := strconv.ParseFloat(typed, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", typed)
		}
		if (e.IsDecimalAllowed == nil || !*e.IsDecimalAllowed) && strings.ContainsAny(typed, ".eE") {
			return nil, fmt.Errorf("%q is not a whole number", typed)
		}
		if lo, err := strconv.ParseFloat(e.MinValue, 64); err == nil && n < lo {
			return nil, fmt.Errorf("%s is below %s", typed, e.MinValue)
		}
		if hi, err := strconv.ParseFloat(e.MaxValue, 64); err == nil && n > hi {
			return nil, fmt.Errorf("%s is above %s", typed, e.MaxValue)
		}
		return map[string]any{"type": e.Type, "value": typed}, nil
	}
	return nil, fmt.Errorf("the fake cannot fill a %s", e.Type)
}

// ViewResponse is how an app answered a view submission: Action is "" (an
// empty answer, which closes the modal), "clear", "update", "push" or
// "errors", with Errors by input block ID.
type ViewResponse struct {
	Action string
	Errors map[string]string
}

// ViewSubmissionResult reads the app's answer to sub (the HTTP response
// body or the Socket Mode ack's payload) as Slack does, and closes the
// modal when the answer does: nothing or "clear". Errors must name input
// blocks of the view (Slack shows only a generic error otherwise) and
// "update" and "push" must carry a view.
func (s *Server) ViewSubmissionResult(sub ViewSubmission, body []byte) (ViewResponse, error) {
	var r ViewResponse
	if t := strings.TrimSpace(string(body)); t != "" && t != "null" {
		var raw struct {
			ResponseAction string            `json:"response_action"`
			Errors         map[string]string `json:"errors"`
			View           json.RawMessage   `json:"view"`
		}
		if err := json.Unmarshal(body, &raw); err != nil {
			return r, fmt.Errorf("view_submission answer %q is not JSON: %w", body, err)
		}
		r = ViewResponse{Action: raw.ResponseAction, Errors: raw.Errors}
		switch r.Action {
		case "errors":
			if len(r.Errors) == 0 {
				return r, fmt.Errorf("response_action errors without errors")
			}
			for id := range r.Errors {
				if _, isInput := sub.View.Input(id); !isInput {
					return r, fmt.Errorf("error for %q, which is not an input block of the view", id)
				}
			}
		case "update", "push":
			if len(raw.View) == 0 {
				return r, fmt.Errorf("response_action %s without a view", r.Action)
			}
		case "clear", "":
		default:
			return r, fmt.Errorf("unknown response_action %q", r.Action)
		}
	}
	if r.Action == "" || r.Action == "clear" {
		s.mu.Lock()
		if v, found := s.views[sub.View.ID]; found {
			v.Open = false
		}
		s.notifyLocked()
		s.mu.Unlock()
	}
	return r, nil
}

// HomeButtonPress is user pressing the button with actionID and value in
// their Home tab.
func (s *Server) HomeButtonPress(user, actionID, value string) (Interaction, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, found := s.views[s.homes[user]]
	if !found {
		return Interaction{}, fmt.Errorf("%s has no Home tab published", user)
	}
	for _, b := range v.Buttons() {
		if b.ActionID != actionID || b.Value != value {
			continue
		}
		u := s.userLocked(user)
		return Interaction{
			TeamID: s.cfg.teamID, UserID: user, UserName: u.Name,
			BlockID: b.BlockID, ActionID: actionID, Value: value, Label: b.Label,
			TriggerID: s.triggerLocked(user), ActionTS: s.tsLocked(), APIAppID: s.cfg.appID,
			ViewID: v.ID, view: s.wireView(v, map[string]any{}), botUserID: s.cfg.bot.ID,
		}, nil
	}
	return Interaction{}, fmt.Errorf("no button %s with value %q in %s's Home tab", actionID, value, user)
}
