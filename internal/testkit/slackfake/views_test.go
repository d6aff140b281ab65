package slackfake_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	"github.com/taskloom/taskloom/internal/testkit/slackfake"
)

func plain(s string) *slack.TextBlockObject {
	return slack.NewTextBlockObject(slack.PlainTextType, s, false, false)
}

// form is a modal with a required text, a select and an optional number.
func form() slack.ModalViewRequest {
	goal := slack.NewPlainTextInputBlockElement(nil, "goal").WithMultiline(true).WithMaxLength(20)
	pick := slack.NewOptionsSelectBlockElement(slack.OptTypeStatic, nil, "pick",
		slack.NewOptionBlockObject("a", plain("A"), nil), slack.NewOptionBlockObject("b", plain("B"), nil))
	num := slack.NewNumberInputBlockElement(nil, "num", false).WithMinValue("1").WithMaxValue("10")
	numBlock := slack.NewInputBlock("num", plain("Number"), nil, num)
	numBlock.Optional = true
	return slack.ModalViewRequest{
		Type: slack.VTModal, Title: plain("Form"), Submit: plain("Go"), CallbackID: "form", PrivateMetadata: `{"c":"C1"}`,
		Blocks: slack.Blocks{BlockSet: []slack.Block{
			slack.NewInputBlock("goal", plain("Goal"), nil, goal),
			slack.NewInputBlock("pick", plain("Pick"), nil, pick),
			numBlock,
		}},
	}
}

// TestModalsThroughSlackGo: views.open exchanges a trigger once, within
// three seconds; the view is checked as Slack checks it; a submission is
// what Slack's client would send, and slack-go reads it.
func TestModalsThroughSlackGo(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	clk := func() time.Time { return now }
	s := slackfake.New(t, slackfake.WithNow(func() time.Time { return clk() }))
	ctx := context.Background()
	api := client(s, s.BotToken())

	if _, err := api.OpenViewContext(ctx, "1.2.nope", form()); err == nil || err.Error() != "invalid_trigger_id" {
		t.Errorf("unknown trigger: %v", err)
	}
	cmd := s.SlashCommand("C1", "U1", "create")
	bad := form()
	bad.Submit = nil
	if _, err := api.OpenViewContext(ctx, cmd.TriggerID, bad); err == nil || err.Error() != "invalid_arguments" {
		t.Errorf("input blocks without submit: %v", err)
	}
	bad = form()
	bad.Title = plain(strings.Repeat("t", 25))
	if _, err := api.OpenViewContext(ctx, cmd.TriggerID, bad); err == nil || err.Error() != "invalid_arguments" {
		t.Errorf("a 25-character title: %v", err)
	}
	bad = form()
	bad.Blocks.BlockSet[0].(*slack.InputBlock).Element.(*slack.PlainTextInputBlockElement).MaxLength = 4000
	if _, err := api.OpenViewContext(ctx, cmd.TriggerID, bad); err == nil || err.Error() != "invalid_arguments" {
		t.Errorf("max_length 4000: %v", err)
	}
	resp, err := api.OpenViewContext(ctx, cmd.TriggerID, form())
	if err != nil || resp.ID == "" || resp.PrivateMetadata != `{"c":"C1"}` {
		t.Fatalf("views.open = %+v, %v", resp, err)
	}
	if _, err := api.OpenViewContext(ctx, cmd.TriggerID, form()); err == nil || err.Error() != "exchanged_trigger_id" {
		t.Errorf("a used trigger: %v", err)
	}
	late := s.SlashCommand("C1", "U1", "create")
	now = now.Add(4 * time.Second)
	if _, err := api.OpenViewContext(ctx, late.TriggerID, form()); err == nil || err.Error() != "expired_trigger_id" {
		t.Errorf("a trigger 4 s old: %v", err)
	}
	if open := s.OpenModals("U1"); len(open) != 1 || open[0].ID != resp.ID || open[0].Title != "Form" {
		t.Fatalf("open modals = %+v", open)
	}

	for _, tc := range []map[string]string{
		{"pick": "a"}, // goal required
		{"goal": strings.Repeat("x", 21), "pick": "a"}, // too long
		{"goal": "x", "pick": "c"},                     // not an option
		{"goal": "x", "pick": "a", "num": "1.5"},       // no decimals
		{"goal": "x", "pick": "a", "num": "11"},        // out of bounds
		{"goal": "x", "pick": "a", "nope": "1"},        // no such input
	} {
		if _, err := s.SubmitView("U1", resp.ID, tc); err == nil {
			t.Errorf("SubmitView(%v): no error", tc)
		}
	}
	if _, err := s.SubmitView("U2", resp.ID, map[string]string{"goal": "x", "pick": "a"}); err == nil {
		t.Error("someone else submitted U1's modal")
	}
	sub, err := s.SubmitView("U1", resp.ID, map[string]string{"goal": "  two\nlines ", "pick": "b"})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sub.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var cb slack.InteractionCallback
	if err := json.Unmarshal(raw, &cb); err != nil {
		t.Fatal(err)
	}
	vals := cb.View.State.Values
	if cb.Type != slack.InteractionTypeViewSubmission || cb.View.ID != resp.ID || cb.View.CallbackID != "form" ||
		cb.View.PrivateMetadata != `{"c":"C1"}` || cb.User.ID != "U1" || cb.TriggerID == "" ||
		vals["goal"]["goal"].Value != "  two\nlines " || vals["pick"]["pick"].SelectedOption.Value != "b" || vals["num"]["num"].Value != "" {
		t.Fatalf("view_submission as slack-go reads it = %+v", cb)
	}

	// The answer: errors must name input blocks; nothing closes the modal.
	if _, err := s.ViewSubmissionResult(sub, []byte(`{"response_action":"errors","errors":{"nope":"x"}}`)); err == nil {
		t.Error("an error for a block that is not an input: accepted")
	}
	r, err := s.ViewSubmissionResult(sub, []byte(`{"response_action":"errors","errors":{"goal":"Say more."}}`))
	if err != nil || r.Action != "errors" || r.Errors["goal"] != "Say more." || len(s.OpenModals("U1")) != 1 {
		t.Errorf("errors answer = %+v, %v; open %d", r, err, len(s.OpenModals("U1")))
	}
	if r, err := s.ViewSubmissionResult(sub, nil); err != nil || r.Action != "" || len(s.OpenModals("U1")) != 0 {
		t.Errorf("empty answer = %+v, %v; open %d, want the modal closed", r, err, len(s.OpenModals("U1")))
	}
	if _, err := s.SubmitView("U1", resp.ID, map[string]string{"goal": "x", "pick": "a"}); err == nil {
		t.Error("a closed modal submitted")
	}
}

// TestHomeTabThroughSlackGo: views.publish keeps one Home tab per person,
// refuses a stale hash, and a button press there names the view.
func TestHomeTabThroughSlackGo(t *testing.T) {
	t.Parallel()
	s := slackfake.New(t, slackfake.WithUser(slackfake.User{ID: "U1", Name: "ann"}))
	ctx := context.Background()
	api := client(s, s.BotToken())
	home := func(text string) slack.HomeTabViewRequest {
		return slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: []slack.Block{
			slack.NewHeaderBlock(plain("Your tasks")),
			slack.NewSectionBlock(slack.NewTextBlockObject(slack.MarkdownType, text, false, false), nil, nil),
			slack.NewActionBlock("task_1", slack.NewButtonBlockElement("pause", "1", plain("Pause"))),
		}}}
	}
	if _, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U404", View: home("x")}); err == nil || err.Error() != "invalid_arguments" {
		t.Errorf("publish for a stranger: %v", err)
	}
	first, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U1", View: home("one")})
	if err != nil {
		t.Fatal(err)
	}
	stale := "1.bad"
	if _, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U1", View: home("x"), Hash: &stale}); err == nil || err.Error() != "hash_conflict" {
		t.Errorf("a stale hash: %v", err)
	}
	second, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U1", View: home("two"), Hash: &first.Hash})
	if err != nil || second.ID != first.ID || second.Hash == first.Hash {
		t.Fatalf("republish = %+v, %v; want the same view, a new hash", second, err)
	}
	var blocks []slack.Block
	for range 101 {
		blocks = append(blocks, slack.NewDividerBlock())
	}
	if _, err := api.PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U1",
		View: slack.HomeTabViewRequest{Type: slack.VTHomeTab, Blocks: slack.Blocks{BlockSet: blocks}}}); err == nil {
		t.Error("101 blocks accepted")
	}
	v, found := s.HomeView("U1")
	if !found || v.Publishes != 2 || strings.Join(v.Texts(), "|") != "Your tasks|two" {
		t.Fatalf("home view = %+v", v)
	}

	opened := s.AppHomeOpened("U1", "home")
	raw, _ := opened.JSON()
	ev, err := slackevents.ParseEvent(raw, slackevents.OptionNoVerifyToken())
	if err != nil {
		t.Fatal(err)
	}
	if h, ok := ev.InnerEvent.Data.(*slackevents.AppHomeOpenedEvent); !ok || h.User != "U1" || h.Tab != "home" || h.View == nil || h.View.ID != v.ID || h.Channel != s.IMChannel("U1") {
		t.Fatalf("app_home_opened = %+v", ev.InnerEvent.Data)
	}

	press, err := s.HomeButtonPress("U1", "pause", "1")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = press.JSON()
	var cb slack.InteractionCallback
	if err := json.Unmarshal(raw, &cb); err != nil {
		t.Fatal(err)
	}
	if cb.Type != slack.InteractionTypeBlockActions || cb.Container.Type != "view" || cb.View.ID != v.ID ||
		cb.View.Type != slack.VTHomeTab || cb.Channel.ID != "" || cb.ActionCallback.BlockActions[0].Value != "1" {
		t.Fatalf("home press = %+v", cb)
	}
	if _, err := s.HomeButtonPress("U1", "resume", "1"); err == nil {
		t.Error("a press of a button that is not there")
	}

	off := slackfake.New(t, slackfake.WithoutHomeTab(), slackfake.WithUser(slackfake.User{ID: "U1"}))
	if _, err := client(off, off.BotToken()).PublishViewContext(ctx, slack.PublishViewContextRequest{UserID: "U1", View: home("x")}); err == nil || err.Error() != "not_enabled" {
		t.Errorf("publish with the Home tab off: %v", err)
	}
}

// TestAssistantThreadsThroughSlackGo: suggested prompts for a thread the
// fake started, and a status that a post in the thread or two minutes end.
func TestAssistantThreadsThroughSlackGo(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	s := slackfake.New(t, slackfake.WithNow(func() time.Time { return now }))
	ctx := context.Background()
	api := client(s, s.BotToken())

	started := s.AssistantThreadStarted("U1", "C9")
	raw, _ := started.JSON()
	ev, err := slackevents.ParseEvent(raw, slackevents.OptionNoVerifyToken())
	if err != nil {
		t.Fatal(err)
	}
	at, ok := ev.InnerEvent.Data.(*slackevents.AssistantThreadStartedEvent)
	if !ok || at.AssistantThread.UserID != "U1" || at.AssistantThread.ChannelID != started.Channel ||
		at.AssistantThread.ThreadTimeStamp != started.ThreadTS || at.AssistantThread.Context.ChannelID != "C9" {
		t.Fatalf("assistant_thread_started = %+v", ev.InnerEvent.Data)
	}
	prompts := slack.AssistantThreadsSetSuggestedPromptsParameters{ChannelID: started.Channel, ThreadTS: started.ThreadTS, Title: "Try"}
	for range 5 {
		prompts.AddPrompt("List", "list tasks")
	}
	if err := api.SetAssistantThreadsSuggestedPromptsContext(ctx, prompts); err == nil || err.Error() != "invalid_arguments" {
		t.Errorf("five prompts: %v", err)
	}
	prompts.Prompts = prompts.Prompts[:2]
	if err := api.SetAssistantThreadsSuggestedPromptsContext(ctx, prompts); err != nil {
		t.Fatal(err)
	}
	elsewhere := prompts
	elsewhere.ThreadTS = "1.000001"
	if err := api.SetAssistantThreadsSuggestedPromptsContext(ctx, elsewhere); err == nil || err.Error() != "invalid_thread_ts" {
		t.Errorf("prompts for a thread that is not an assistant's: %v", err)
	}
	if title, got := s.SuggestedPrompts(started.Channel, started.ThreadTS); title != "Try" || len(got) != 2 || got[0].Message != "list tasks" {
		t.Errorf("prompts = %q %+v", title, got)
	}

	status := func(text string) {
		t.Helper()
		if err := api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{
			ChannelID: started.Channel, ThreadTS: started.ThreadTS, Status: text}); err != nil {
			t.Fatal(err)
		}
	}
	status("is working on #1…")
	if got := s.AssistantStatus(started.Channel, started.ThreadTS); got != "is working on #1…" {
		t.Errorf("status = %q", got)
	}
	// A post elsewhere leaves it; a post in the thread ends it.
	if _, _, err := api.PostMessageContext(ctx, started.Channel, slack.MsgOptionText("top level", false)); err != nil {
		t.Fatal(err)
	}
	if got := s.AssistantStatus(started.Channel, started.ThreadTS); got == "" {
		t.Error("a post outside the thread cleared the status")
	}
	if _, _, err := api.PostMessageContext(ctx, started.Channel, slack.MsgOptionText("reply", false), slack.MsgOptionTS(started.ThreadTS)); err != nil {
		t.Fatal(err)
	}
	if got := s.AssistantStatus(started.Channel, started.ThreadTS); got != "" {
		t.Errorf("after a reply in the thread the status is %q", got)
	}
	status("is working on #1…")
	now = now.Add(slackfake.StatusTimeout)
	if got := s.AssistantStatus(started.Channel, started.ThreadTS); got != "" {
		t.Errorf("two minutes on, the status is %q", got)
	}
	status("is working on #1…")
	status("")
	if got := s.AssistantStatus(started.Channel, started.ThreadTS); got != "" {
		t.Errorf("after clearing, the status is %q", got)
	}
}

// TestMarkdownDeleteAndOpen: markdown blocks in messages (12,000
// characters in all), chat.delete, conversations.open.
func TestMarkdownDeleteAndOpen(t *testing.T) {
	t.Parallel()
	s := slackfake.New(t, slackfake.WithUser(slackfake.User{ID: "U1"}))
	ctx := context.Background()
	api := client(s, s.BotToken())
	_, ts, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("fallback", false),
		slack.MsgOptionBlocks(slack.NewMarkdownBlock("", "**bold** and <!channel>")))
	if err != nil {
		t.Fatal(err)
	}
	m := s.Messages()[0]
	if got := m.MarkdownTexts(); len(got) != 1 || got[0] != "**bold** and <!channel>" || m.BlockText() != got[0] {
		t.Errorf("markdown texts = %q, block text %q", got, m.BlockText())
	}
	if p := m.Pings(); len(p) != 1 || p[0] != "!channel" {
		t.Errorf("pings = %v; a mention in a markdown block counts", p)
	}
	big := strings.Repeat("x", 6001)
	if _, _, err := api.PostMessageContext(ctx, "C1", slack.MsgOptionText("fallback", false),
		slack.MsgOptionBlocks(slack.NewMarkdownBlock("", big), slack.NewMarkdownBlock("", big))); err == nil || err.Error() != "invalid_blocks" {
		t.Errorf("12,002 characters of markdown: %v", err)
	}

	if _, _, err := api.DeleteMessageContext(ctx, "C1", ts); err != nil {
		t.Fatal(err)
	}
	if _, _, err := api.DeleteMessageContext(ctx, "C1", ts); err == nil || err.Error() != "message_not_found" {
		t.Errorf("deleting twice: %v", err)
	}
	if _, _, _, err := api.UpdateMessageContext(ctx, "C1", ts, slack.MsgOptionText("edit", false)); err == nil || err.Error() != "message_not_found" {
		t.Errorf("editing a deleted message: %v", err)
	}
	if h, err := api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{ChannelID: "C1"}); err != nil || len(h.Messages) != 0 {
		t.Errorf("history after the delete = %+v, %v", h, err)
	}
	if !s.Messages()[0].Deleted {
		t.Error("the message is not marked deleted")
	}
	ch, _, _, err := api.OpenConversationContext(ctx, &slack.OpenConversationParameters{Users: []string{"U1"}})
	if err != nil || ch.ID != s.IMChannel("U1") {
		t.Errorf("conversations.open = %+v, %v", ch, err)
	}
}
