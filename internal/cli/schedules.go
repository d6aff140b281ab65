package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
)

const schedulesLong = `A schedule creates a task from its goal at each time of a cron expression:
five fields (minute hour day-of-month month day-of-week), a descriptor such as
@daily or "@every 2h", either after CRON_TZ=<zone> (UTC without one).

` + tasksLong

// schedule is a schedule as the API answers it.
type schedule struct {
	ID        int64         `json:"id"`
	Name      string        `json:"name"`
	Cron      string        `json:"cron"`
	Goal      string        `json:"goal"`
	Room      string        `json:"room"`
	Requestor string        `json:"requestor_id"`
	Strategy  string        `json:"strategy"`
	Overlap   string        `json:"overlap"`
	CatchUp   string        `json:"catch_up"`
	Paused    bool          `json:"paused"`
	NextRunAt time.Time     `json:"next_run_at"`
	LastTask  int64         `json:"last_task"`
	Failures  int           `json:"failures"`
	Events    []scheduleEvt `json:"events"`
}

type scheduleEvt struct {
	Type       string    `json:"type"`
	TaskNumber int64     `json:"task_number"`
	Detail     string    `json:"detail"`
	Time       time.Time `json:"time"`
}

type scheduleFlags struct {
	cron, goal, name, room, strategy, overlap, catchUp string
}

// SchedulesCommand is `taskloom schedules` with its subcommands
// (docs/schedules.md): list, add, rm, pause, resume, show; getenv reads
// TASKLOOM_URL and TASKLOOM_API_TOKEN, as for `taskloom tasks`.
func SchedulesCommand(getenv func(string) string) *cobra.Command {
	r := &runner{getenv: getenv}
	var sf scheduleFlags
	root := &cobra.Command{
		Use:   "schedules",
		Short: "list and manage recurring tasks over the API",
		Long:  schedulesLong,
		Args:  cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			r.ctx, r.out, r.errOut = c.Context(), c.OutOrStdout(), c.ErrOrStderr()
			if len(args) > 0 {
				return r.finish(c, usagef("unknown command %q", args[0]))
			}
			return r.finish(c, r.listSchedules())
		},
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetUsageTemplate(UsageTemplate)
	root.SetHelpTemplate(HelpTemplate)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return r.finish(c, usageError{err.Error()}) })
	pf := root.PersistentFlags()
	pf.BoolVar(&r.json, "json", false, "print the API's JSON, for scripts")
	pf.StringVar(&r.url, "url", "", "where Taskloom serves HTTP (default $TASKLOOM_URL)")
	add := func(c *cobra.Command, run func(args []string) error) *cobra.Command {
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(c *cobra.Command, args []string) error {
			r.ctx, r.out, r.errOut = c.Context(), c.OutOrStdout(), c.ErrOrStderr()
			return r.finish(c, run(args))
		}
		c.ValidArgsFunction = cobra.NoFileCompletions
		root.AddCommand(c)
		return c
	}
	add(&cobra.Command{Use: "list", Aliases: []string{"ls"}, Short: "the schedules with their next run times"}, func(args []string) error {
		if len(args) > 0 {
			return usagef("list takes no arguments (got %q)", args[0])
		}
		return r.listSchedules()
	})
	addCmd := add(&cobra.Command{Use: "add", Short: "create a schedule",
		Example: `  taskloom schedules add --cron "0 9 * * 1-5" --goal "Summarise yesterday's alerts"
  taskloom schedules add --cron "@every 2h" --goal "Check the backups" --room discord:123`},
		func(args []string) error { return r.addSchedule(sf, args) })
	f := addCmd.Flags()
	f.StringVar(&sf.cron, "cron", "", "when: a cron expression or descriptor (required)")
	f.StringVar(&sf.goal, "goal", "", "what each run does (required)")
	f.StringVar(&sf.name, "name", "", "the schedule's name (default: from the goal)")
	f.StringVar(&sf.room, "room", "", "a chat room for its runs' notifications, e.g. discord:123")
	f.StringVar(&sf.strategy, "strategy", "", "how each run is worked: "+strings.Join(Strategies, ", ")+" (default loop)")
	f.StringVar(&sf.overlap, "overlap", "", "skip (default): no run while the last one is active; allow: start another")
	f.StringVar(&sf.catchUp, "catch-up", "", "one (default): one run for times missed while down; none: none")
	_ = addCmd.RegisterFlagCompletionFunc("strategy", cobra.FixedCompletions(Strategies, cobra.ShellCompDirectiveNoFileComp))
	_ = addCmd.RegisterFlagCompletionFunc("overlap", cobra.FixedCompletions([]string{"skip", "allow"}, cobra.ShellCompDirectiveNoFileComp))
	_ = addCmd.RegisterFlagCompletionFunc("catch-up", cobra.FixedCompletions([]string{"one", "none"}, cobra.ShellCompDirectiveNoFileComp))
	add(&cobra.Command{Use: "show ID", Aliases: []string{"get"}, Short: "one schedule and its latest events"}, r.showSchedule)
	for _, op := range []struct{ use, short, method, suffix string }{
		{"rm ID", "delete a schedule; its runs are kept", "DELETE", ""},
		{"pause ID", "stop a schedule creating runs until it is resumed", "POST", "/pause"},
		{"resume ID", "start a paused schedule again from its next time", "POST", "/resume"},
	} {
		name := strings.Fields(op.use)[0]
		add(&cobra.Command{Use: op.use, Short: op.short}, func(args []string) error {
			return r.controlSchedule(name, op.method, op.suffix, args)
		})
	}
	return root
}

// scheduleNumber reads a schedule id: "3" or "#3".
func scheduleNumber(args []string, cmd string) (int64, error) {
	if len(args) != 1 {
		return 0, usagef("%s takes one schedule id, e.g. `taskloom schedules %s 3`", cmd, cmd)
	}
	n, err := strconv.ParseInt(strings.TrimPrefix(args[0], "#"), 10, 64)
	if err != nil || n <= 0 {
		return 0, usagef("%q is not a schedule id", args[0])
	}
	return n, nil
}

func (r *runner) listSchedules() error {
	if err := r.connect(); err != nil {
		return err
	}
	var l struct {
		Schedules []schedule `json:"schedules"`
	}
	raw, err := r.c.call(r.ctx, "GET", "/api/schedules", nil, &l)
	if err != nil {
		return err
	}
	if r.json {
		return r.printJSON(raw)
	}
	writeSchedules(r.out, l.Schedules)
	return nil
}

func (r *runner) addSchedule(sf scheduleFlags, args []string) error {
	if len(args) > 0 {
		return usagef("add takes its goal as --goal (got %q)", args[0])
	}
	if strings.TrimSpace(sf.cron) == "" || strings.TrimSpace(sf.goal) == "" {
		return usagef(`add needs --cron and --goal, e.g. taskloom schedules add --cron "@daily" --goal "Check the backups"`)
	}
	body := map[string]string{"cron": sf.cron, "goal": sf.goal}
	for k, v := range map[string]string{"name": sf.name, "room": sf.room, "strategy": sf.strategy, "overlap": sf.overlap, "catch_up": sf.catchUp} {
		if strings.TrimSpace(v) != "" {
			body[k] = v
		}
	}
	if err := r.connect(); err != nil {
		return err
	}
	var s schedule
	raw, err := r.c.call(r.ctx, "POST", "/api/schedules", body, &s)
	if err != nil {
		return err
	}
	if r.json {
		return r.printJSON(raw)
	}
	fmt.Fprintf(r.out, "Created schedule #%d %q (%s); next run %s.\n", s.ID, clean(s.Name), clean(s.Cron), nextRun(s))
	return nil
}

func (r *runner) showSchedule(args []string) error {
	n, err := scheduleNumber(args, "show")
	if err != nil {
		return err
	}
	if err := r.connect(); err != nil {
		return err
	}
	var s schedule
	raw, err := r.c.call(r.ctx, "GET", fmt.Sprintf("/api/schedules/%d", n), nil, &s)
	if err != nil {
		return err
	}
	if r.json {
		return r.printJSON(raw)
	}
	writeSchedules(r.out, []schedule{s})
	fmt.Fprintf(r.out, "\nGoal: %s\n", clean(s.Goal))
	if len(s.Events) > 0 {
		fmt.Fprintln(r.out, "\nEvents, newest first:")
		tw := tabwriter.NewWriter(r.out, 0, 0, 2, ' ', 0)
		for _, e := range s.Events {
			task := ""
			if e.TaskNumber != 0 {
				task = fmt.Sprintf("#%d", e.TaskNumber)
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", e.Time.UTC().Format(time.DateTime), clean(e.Type), task, clean(e.Detail))
		}
		tw.Flush()
	}
	return nil
}

func (r *runner) controlSchedule(op, method, suffix string, args []string) error {
	n, err := scheduleNumber(args, op)
	if err != nil {
		return err
	}
	if err := r.connect(); err != nil {
		return err
	}
	var s schedule
	raw, err := r.c.call(r.ctx, method, fmt.Sprintf("/api/schedules/%d%s", n, suffix), nil, &s)
	if err != nil {
		return err
	}
	if r.json {
		return r.printJSON(raw)
	}
	switch op {
	case "rm":
		fmt.Fprintf(r.out, "Deleted schedule #%d %q; its runs are kept.\n", s.ID, clean(s.Name))
	case "pause":
		fmt.Fprintf(r.out, "Schedule #%d %q is paused.\n", s.ID, clean(s.Name))
	default:
		fmt.Fprintf(r.out, "Schedule #%d %q is running; next run %s.\n", s.ID, clean(s.Name), nextRun(s))
	}
	return nil
}

func nextRun(s schedule) string {
	if s.Paused {
		return "none while paused"
	}
	return s.NextRunAt.UTC().Format("2006-01-02 15:04:05 UTC")
}

func writeSchedules(w io.Writer, list []schedule) {
	if len(list) == 0 {
		fmt.Fprintln(w, "No schedules. Create one with: taskloom schedules add --cron \"@daily\" --goal \"…\"")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tCRON\tNEXT RUN\tLAST RUN\tROOM")
	for _, s := range list {
		last := "-"
		if s.LastTask != 0 {
			last = fmt.Sprintf("#%d", s.LastTask)
		}
		room := s.Room
		if room == "" {
			room = "-"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", s.ID, clean(s.Name), clean(s.Cron), nextRun(s), last, clean(room))
	}
	tw.Flush()
}
