package slack

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	slackapi "github.com/slack-go/slack"

	"github.com/taskloom/taskloom/actions"
	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/clock"
	"github.com/taskloom/taskloom/plugin"
)

// The /task create modal.
const (
	// CallbackCreate is the callback ID of the modal.
	CallbackCreate = "taskloom_create"
	// The modal's input blocks; each one's element has the same action ID.
	BlockGoal          = "goal"
	BlockStrategy      = "strategy"
	BlockMaxIterations = "max_iterations"
	// MaxIterationsCap is the most max iterations the modal takes, as the
	// HTTP API.
	MaxIterationsCap = 10000
	// goalInputLimit is the most a plain_text_input takes on Slack; a
	// longer goal (to domain.MaxGoalLength) goes in /task create <goal>.
	goalInputLimit = 3000
	// createAction is the action the modal's submission runs: the one
	// `create task` runs.
	createAction = "create_task"
)

// MaxOptions is how many options Slack lets a static select have: the
// modal offers the first of the strategies (loop, the default, first).
const MaxOptions = 100

// strategies are the strategies the modal offers and takes: the task
// service's (actions.Strategies), the default first.
func (a *Adapter) strategies() []string {
	s := actions.Strategies(a.rt)
	return s[:min(len(s), MaxOptions)]
}

// createOrigin is where a /task create modal came from, carried in its
// private_metadata to its submission: the command's channel (where the
// task reports), whether that was a direct message, the workspace, and
// the command's response URL (where the answer goes).
type createOrigin struct {
	Channel     string `json:"c"`
	DM          bool   `json:"dm,omitempty"`
	Team        string `json:"t,omitempty"`
	ResponseURL string `json:"r,omitempty"`
}

// isBareCreate says whether a /task command's text is the create
// subcommand of actions' table of commands ("create", or its text,
// "create task") and nothing else: the modal's cue.
func isBareCreate(text string) bool {
	c, ok := actions.SlashCommand("create")
	if !ok {
		return false
	}
	f := strings.Join(strings.Fields(strings.ToLower(text)), " ")
	return f != "" && (f == c.Slash.Name || f == c.Slash.Text)
}

// openCreateModal answers a bare `/task create` with the modal, opened with
// the command's trigger (which Slack honours for three seconds), and an
// empty acknowledgement; when Slack will not open it, the acknowledgement
// says how to create the task in words instead.
func (a *Adapter) openCreateModal(cmd slackapi.SlashCommand, ack func(body []byte)) {
	meta, err := json.Marshal(createOrigin{Channel: cmd.ChannelID, DM: isDMChannel(cmd.ChannelID) || cmd.ChannelName == "directmessage",
		Team: cmd.TeamID, ResponseURL: cmd.ResponseURL})
	if err == nil && utf8.RuneCount(meta) > 3000 {
		err = errors.New("the command's details do not fit in the modal")
	}
	if err == nil {
		ctx, cancel := clock.WithTimeout(a.base, a.clk, AckWindow)
		_, err = a.api.OpenViewContext(ctx, cmd.TriggerID, a.createModal(string(meta)))
		cancel()
	}
	if err == nil {
		ack(nil)
		return
	}
	a.log.Warn("cannot open the /task create modal", "user", cmd.UserID, "err", apiError("views.open", err))
	body, _, _ := ackBody(plugin.Response{Ephemeral: true,
		Text: "I could not open the form just now. Say `/task create <goal>` instead, for example `/task create Build auth`."})
	ack(body)
}

// createModal is the modal: the goal (required, several lines), the
// strategy and the max iterations — each of the last two only when the
// create action takes it, so that nothing asked is dropped.
func (a *Adapter) createModal(meta string) slackapi.ModalViewRequest {
	plain := func(s string) *slackapi.TextBlockObject {
		return slackapi.NewTextBlockObject(slackapi.PlainTextType, s, false, false)
	}
	goal := slackapi.NewPlainTextInputBlockElement(plain("Build the login page, with tests"), BlockGoal).
		WithMultiline(true).WithMaxLength(goalInputLimit)
	blocks := []slackapi.Block{slackapi.NewInputBlock(BlockGoal, plain("Goal"),
		plain("What the agent should do. For a goal longer than 3,000 characters, use /task create <goal>."), goal)}
	if a.createTakes("strategy") {
		var opts []*slackapi.OptionBlockObject
		for i, s := range a.strategies() {
			label := s
			if i == 0 {
				label += " (default)"
			}
			opts = append(opts, slackapi.NewOptionBlockObject(s, plain(label), nil))
		}
		sel := slackapi.NewOptionsSelectBlockElement(slackapi.OptTypeStatic, plain("Strategy"), BlockStrategy, opts...)
		sel.InitialOption = opts[0]
		blocks = append(blocks, slackapi.NewInputBlock(BlockStrategy, plain("Strategy"), plain("How the agent works the task."), sel))
	}
	if a.createTakes("max_iterations") {
		num := slackapi.NewNumberInputBlockElement(plain("the default"), BlockMaxIterations, false).
			WithMinValue("1").WithMaxValue(strconv.Itoa(MaxIterationsCap))
		in := slackapi.NewInputBlock(BlockMaxIterations, plain("Max iterations"), plain("Leave it empty for the default."), num)
		in.Optional = true
		blocks = append(blocks, in)
	}
	return slackapi.ModalViewRequest{
		Type: slackapi.VTModal, Title: plain("New task"), Submit: plain("Create"), Close: plain("Cancel"),
		CallbackID: CallbackCreate, PrivateMetadata: meta, Blocks: slackapi.Blocks{BlockSet: blocks},
	}
}

// createTakes says whether the create action's parameters include name.
func (a *Adapter) createTakes(name string) bool {
	act, ok := a.rt.Action(createAction)
	if !ok {
		return false
	}
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(act.Info().Parameters, &schema) != nil {
		return false
	}
	_, takes := schema.Properties[name]
	return takes
}

// onViewSubmission answers a submission of the create modal (respond is
// called exactly once, with the answer's body or nil): input that is not
// valid is answered with errors by field and creates nothing; valid input
// runs the create action, as `create task` does, for the person who
// submitted, in the channel the command came from. Within AckWindow a
// refusal becomes an error in the modal and a success closes it, the
// reply following where the command's answer would go; later, the modal
// closes and the answer, refusal or not, follows the same way.
func (a *Adapter) onViewSubmission(cb slackapi.InteractionCallback, respond func(body []byte)) {
	if _, ok := a.identity(); !ok || cb.View.CallbackID != CallbackCreate {
		respond(nil)
		return
	}
	fieldErrors := func(errs map[string]string) {
		body, err := json.Marshal(slackapi.NewErrorsViewSubmissionResponse(errs))
		if err != nil {
			body = nil
		}
		respond(body)
	}
	var origin createOrigin
	if err := json.Unmarshal([]byte(cb.View.PrivateMetadata), &origin); err != nil || origin.Channel == "" {
		fieldErrors(map[string]string{BlockGoal: "This form has lost where it came from. Close it and run /task create again."})
		return
	}
	params, errs := readCreateForm(cb.View.State, a.strategies())
	if len(errs) > 0 {
		fieldErrors(errs)
		return
	}
	raw, err := json.Marshal(params)
	if err != nil {
		fieldErrors(map[string]string{BlockGoal: "Something went wrong; please try again."})
		return
	}

	ctx := a.base
	r := room{Channel: origin.Channel}
	team := origin.Team
	if team == "" {
		team = cb.Team.ID
	}
	id := "view_submission:" + cb.TriggerID
	if cb.TriggerID == "" {
		id = "view_submission:" + cb.View.ID + ":" + cb.View.Hash
	}
	msg, _ := a.message(ctx, id, team, cb.User.ID, r, strings.TrimSpace("/task create "+params["goal"].(string)))
	msg.Command, msg.DM, msg.Time = true, origin.DM, a.clk.Now()
	if msg.AuthorName == "" {
		msg.AuthorName = cb.User.Name
	}
	// As the pipeline does for a message: the submission is acted on once,
	// however often Slack delivers it.
	_, inserted, err := a.rt.Store().SaveMemory(ctx, domain.Memory{Platform: Platform, MessageID: id, Room: r.String(),
		WorkspaceID: team, AuthorID: msg.AuthorID, AuthorName: msg.AuthorName, Text: msg.Text, CreatedAt: domain.UTC(msg.Time)})
	if err != nil {
		a.log.Error("cannot record a modal submission", "user", cb.User.ID, "err", err)
		fieldErrors(map[string]string{BlockGoal: "Something went wrong; please try again."})
		return
	}
	if !inserted {
		a.log.Info("modal submission already handled; ignoring redelivery", "submission", id)
		respond(nil)
		return
	}

	type outcome struct {
		resp plugin.Response
		ok   bool
	}
	done := make(chan outcome, 1)
	a.goTracked(func() {
		res, err := a.rt.RunAction(ctx, createAction, &plugin.Call{Message: &msg, Params: raw})
		resp, ok := actionAnswer(res, err)
		if !ok && err != nil {
			a.log.Error("creating a task from the modal failed", "user", cb.User.ID, "err", err)
		}
		done <- outcome{resp, ok}
	})
	answer := func(o outcome) {
		a.goTracked(func() {
			err := a.retryRateLimited(a.base, func() error {
				return a.respondOrPost(a.base, slackapi.SlashCommand{ResponseURL: origin.ResponseURL, UserID: cb.User.ID}, r, o.resp)
			})
			if err != nil && origin.ResponseURL != "" {
				// The response URL lasts half an hour: a modal left open
				// longer is answered in the channel.
				err = a.retryRateLimited(a.base, func() error {
					return a.respondOrPost(a.base, slackapi.SlashCommand{UserID: cb.User.ID}, r, o.resp)
				})
			}
			if err != nil {
				a.log.Error("answering a modal submission failed", "user", cb.User.ID, "err", err)
			}
		})
	}
	t := a.clk.NewTimer(AckWindow)
	defer t.Stop()
	select {
	case o := <-done:
		if !o.ok {
			fieldErrors(map[string]string{a.fieldOf(o.resp.Text): o.resp.Text})
			return
		}
		respond(nil)
		answer(o)
	case <-t.C():
		respond(nil)
		a.goTracked(func() { answer(<-done) })
	}
}

// readCreateForm reads the modal's state as the create action's parameters
// (goal, and strategy and max_iterations when given), or the errors by
// field that make it invalid; strategies are those it takes.
func readCreateForm(state *slackapi.ViewState, strategies []string) (map[string]any, map[string]string) {
	value := func(block string) slackapi.BlockAction {
		if state == nil {
			return slackapi.BlockAction{}
		}
		return state.Values[block][block]
	}
	errs := map[string]string{}
	params := map[string]any{}
	goal := strings.TrimSpace(value(BlockGoal).Value)
	switch n := utf8.RuneCountInString(goal); {
	case n == 0:
		errs[BlockGoal] = "Say what the task should do."
	case n > domain.MaxGoalLength:
		errs[BlockGoal] = fmt.Sprintf("The goal is %d characters; the limit is %d.", n, domain.MaxGoalLength)
	}
	params["goal"] = goal
	if s := value(BlockStrategy).SelectedOption.Value; s != "" {
		if !slices.Contains(strategies, s) {
			errs[BlockStrategy] = fmt.Sprintf("There is no strategy %q; pick one from the list.", s)
		}
		params["strategy"] = s
	}
	if s := strings.TrimSpace(value(BlockMaxIterations).Value); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > MaxIterationsCap {
			errs[BlockMaxIterations] = fmt.Sprintf("Max iterations is a whole number from 1 to %d.", MaxIterationsCap)
		}
		params["max_iterations"] = n
	}
	return params, errs
}

// fieldOf is the modal's field a refusal of the create action is about:
// the strategy or the max iterations when it names them (and the modal has
// them), else the goal.
func (a *Adapter) fieldOf(sentence string) string {
	s := strings.ToLower(sentence)
	switch {
	case strings.Contains(s, "strateg") && a.createTakes("strategy"):
		return BlockStrategy
	case strings.Contains(s, "iteration") && a.createTakes("max_iterations"):
		return BlockMaxIterations
	}
	return BlockGoal
}

// actionAnswer is what a person reads of an action's outcome, and whether
// it succeeded: its text, its refusal, or — for an unexpected error — an
// apology (the detail is for the log).
func actionAnswer(res plugin.Result, err error) (plugin.Response, bool) {
	var ae *plugin.ActionError
	switch {
	case err == nil && res.Success:
		return plugin.Response{Text: res.Text, Ephemeral: res.Ephemeral, TaskNumber: res.TaskNumber}, true
	case err == nil:
		return plugin.Response{Text: res.Error, Ephemeral: true}, false
	case errors.As(err, &ae) && ae.Refused:
		return plugin.Response{Text: sentenceOf(ae.Err.Error()), Ephemeral: true}, false
	}
	return plugin.Response{Text: "Sorry — something went wrong while creating the task. It has been logged; please try again.", Ephemeral: true}, false
}

// sentenceOf makes s a sentence: a capital first letter, a full stop.
func sentenceOf(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.ContainsAny(s[len(s)-1:], ".!?") {
		s += "."
	}
	return s
}
