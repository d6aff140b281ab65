package actions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/taskloom/taskloom/domain"
	"github.com/taskloom/taskloom/internal/render"
	"github.com/taskloom/taskloom/plugin"
)

// ScheduleCommand is one of the schedule commands of docs/schedules.md:
// `every <spec> task <goal>`, `schedules`, `unschedule #S`,
// `pause schedule #S`, `resume schedule #S`. They act only on what the
// grammar read from the message itself, which is where their arguments
// come from: a model that picks `schedule_task` for free text gets the
// usage back, so no recurring work is made from a model's reading of a
// message. Unschedule, pause and resume are a person's decisions
// (plugin.ActionInfo.Decision): deleting ends recurring work, resuming
// gives it back its creator's authority, and pausing is resuming's
// counterpart; the pipeline never lets a model pick them.
type ScheduleCommand struct {
	*Chat
	Kind string // CmdSchedule, CmdSchedules, CmdUnschedule, CmdPauseSchedule or CmdResumeSchedule
}

var (
	_ plugin.Action         = ScheduleCommand{}
	_ plugin.CommandMatcher = ScheduleCommand{}
)

// SchedulesShown caps the schedules `schedules` lists.
const SchedulesShown = 25

var scheduleInfo = map[string]plugin.ActionInfo{
	CmdSchedule: {Name: "schedule_task", Similes: []string{"every"},
		Description: "Create a task from a goal at the times of a cron expression: every `0 9 * * 1-5` task <goal>.",
		Examples:    []string{"every `0 9 * * 1-5` task summarise yesterday's alerts", "every @daily task check the backups"}},
	CmdSchedules: {Name: "list_schedules", Similes: []string{"schedules"},
		Description: "List the schedules of this workspace with their next run times.", Examples: []string{"schedules"}},
	CmdUnschedule: {Name: "unschedule", Description: "Delete a schedule; its runs stay. Its creator and admins may.",
		Examples: []string{"unschedule #2"}, Decision: true},
	CmdPauseSchedule: {Name: "pause_schedule", Description: "Pause a schedule. Its creator and admins may.",
		Examples: []string{"pause schedule #2"}, Decision: true},
	CmdResumeSchedule: {Name: "resume_schedule", Description: "Resume a paused schedule. Its creator and admins may.",
		Examples: []string{"resume schedule #2"}, Decision: true},
}

func (a ScheduleCommand) Info() plugin.ActionInfo {
	info := scheduleInfo[a.Kind]
	info.Parameters = schema(`{"type":"object","properties":{}}`)
	return info
}

func (a ScheduleCommand) MatchCommand(msg *plugin.Message) (json.RawMessage, bool) {
	c, ok := ParseCommand(msg.Text)
	if !ok || c.Kind != a.Kind {
		return nil, false
	}
	return json.RawMessage(`{}`), true
}

// scheduleUsage is what a schedule command that does not read gets.
func scheduleUsage(f render.Flavor) string {
	return fmt.Sprintf("Say when and what: %s, or %s, %s (cron expressions go in backticks; descriptors such as %s need none).",
		"every `0 9 * * 1-5` task summarise yesterday's alerts", inlineCode(f, "every @daily task check the backups"),
		inlineCode(f, "every @every 2h task …"), inlineCode(f, "@hourly"))
}

func (a ScheduleCommand) Handle(ctx context.Context, call *plugin.Call) (plugin.Result, error) {
	msg, refused := chatMessage(call)
	if refused != nil {
		return *refused, nil
	}
	f := render.ForPlatform(msg.Platform)
	c, ok := ParseCommand(msg.Text)
	if (!ok || c.Kind != a.Kind) && a.Kind != CmdSchedules {
		// Chosen for free text, not typed: there are no arguments to
		// act on, so say how to type them.
		return plugin.Result{Error: scheduleUsage(f)}, nil
	}
	if a.Schedules == nil {
		return fail("Schedules are not available here.")
	}
	who := domain.ScheduleCaller{ID: msg.AuthorID, WorkspaceID: WorkspaceOf(msg),
		Admin: msg.Admin || (msg.AuthorID != "" && slices.Contains(a.Admins, msg.AuthorID))}
	switch a.Kind {
	case CmdSchedule:
		return a.create(ctx, call, msg, c, f)
	case CmdSchedules:
		list, err := a.Schedules.List(ctx, who)
		if err != nil {
			return plugin.Result{}, err
		}
		return plugin.Result{Success: true, Text: scheduleList(f, list)}, nil
	}
	if c.Number <= 0 {
		if c.Beyond != "" {
			return fail("There is no schedule #%s here.", c.Beyond)
		}
		return fail("Which schedule? Say %s; %s lists them.", inlineCode(f, map[string]string{
			CmdUnschedule: "unschedule #2", CmdPauseSchedule: "pause schedule #2", CmdResumeSchedule: "resume schedule #2"}[a.Kind]),
			inlineCode(f, "schedules"))
	}
	var (
		sc   domain.Schedule
		err  error
		verb string
	)
	switch a.Kind {
	case CmdUnschedule:
		sc, err = a.Schedules.Delete(ctx, c.Number, who)
		verb = "delete"
	case CmdPauseSchedule:
		sc, err = a.Schedules.Pause(ctx, c.Number, true, who)
		verb = "pause"
	default:
		sc, err = a.Schedules.Pause(ctx, c.Number, false, who)
		verb = "resume"
	}
	switch {
	case errors.Is(err, domain.ErrScheduleNotFound):
		return fail("There is no schedule #%d here.", c.Number)
	case errors.Is(err, domain.ErrScheduleForbidden):
		return fail("Only the person who created schedule #%d, or an admin, can %s it.", c.Number, verb)
	case err != nil:
		return plugin.Result{}, err
	}
	var text string
	switch a.Kind {
	case CmdUnschedule:
		text = fmt.Sprintf("🗑️ Schedule #%d %s deleted; its runs are kept.", sc.ID, quoted(f, sc.Name))
	case CmdPauseSchedule:
		text = fmt.Sprintf("⏸️ Schedule #%d %s paused. Say %s to start it again.", sc.ID, quoted(f, sc.Name),
			inlineCode(f, fmt.Sprintf("resume schedule #%d", sc.ID)))
	default:
		text = fmt.Sprintf("▶️ Schedule #%d %s resumed; next run %s.", sc.ID, quoted(f, sc.Name), when(sc.NextRunAt))
	}
	return plugin.Result{Success: true, Text: text}, nil
}

func (a ScheduleCommand) create(ctx context.Context, call *plugin.Call, msg *plugin.Message, c Command, f render.Flavor) (plugin.Result, error) {
	if c.Spec == "" || c.Text == "" {
		return plugin.Result{Error: scheduleUsage(f)}, nil
	}
	sc, err := a.Schedules.Create(ctx, domain.NewSchedule{
		Cron: c.Spec, Goal: c.Text, RequestorID: msg.AuthorID, Platform: msg.Platform, Room: msg.Room,
		WorkspaceID: WorkspaceOf(msg), Actor: msg.AuthorID, Now: call.Runtime.Clock().Now(),
	})
	switch {
	case errors.Is(err, domain.ErrInvalid), errors.Is(err, domain.ErrLimit):
		return fail("Cannot create the schedule: %s.", render.Escape(f, reason(err)))
	case err != nil:
		return plugin.Result{}, err
	}
	return plugin.Result{Success: true, Text: fmt.Sprintf("🔁 Schedule #%d %s created: %s, next run %s. Each run is a task posted here; say %s to stop it.",
		sc.ID, quoted(f, sc.Name), inlineCode(f, sc.Cron), when(sc.NextRunAt), inlineCode(f, fmt.Sprintf("unschedule #%d", sc.ID)))}, nil
}

// when is a run time as chat shows it: UTC, to the minute (to the second
// when it has seconds).
func when(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	if t.Second() != 0 {
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// scheduleList is the answer to `schedules`.
func scheduleList(f render.Flavor, list []domain.Schedule) string {
	if len(list) == 0 {
		return "🔁 No schedules here. Say " + inlineCode(f, "every @daily task <goal>") + " to make one."
	}
	lines := []string{fmt.Sprintf("🔁 Schedules (%d):", len(list))}
	for i, sc := range list {
		if i == SchedulesShown {
			lines = append(lines, fmt.Sprintf("… and %d more (the dashboard lists them all)", len(list)-i))
			break
		}
		state := "next " + when(sc.NextRunAt)
		if sc.Paused {
			state = "paused"
		}
		line := fmt.Sprintf("• #%d %s %s — %s", sc.ID, quoted(f, sc.Name), inlineCode(f, sc.Cron), state)
		if sc.LastTask != 0 {
			line += fmt.Sprintf(", last run #%d", sc.LastTask)
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}
