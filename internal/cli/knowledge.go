package cli

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
)

// MaxKnowledgeBytes is the largest document the server takes (4 MiB);
// a larger file is refused here, before it is sent.
const MaxKnowledgeBytes = 4 << 20

// document is a knowledge document as the API describes it.
type document struct {
	ID        int64     `json:"id"`
	Title     string    `json:"title"`
	Room      string    `json:"room"`
	Bytes     int       `json:"bytes"`
	Passages  int       `json:"passages"`
	CreatedAt time.Time `json:"created_at"`
}

// KnowledgeCommand is `taskloom knowledge`: add, list and remove the
// documents recall finds passages of (docs/memory.md), over the API.
// getenv reads TASKLOOM_URL and TASKLOOM_API_TOKEN.
func KnowledgeCommand(getenv func(string) string) *cobra.Command {
	r := &runner{getenv: getenv}
	var room, title string
	top := &cobra.Command{
		Use:   "knowledge",
		Short: "add, list and remove the documents the bot and its tasks recall",
		Long: `Knowledge documents are split into passages; chat and task prompts recall the
passages that bear on them (docs/memory.md). A document of a room is recalled
there (and in its channel's threads); one without a room everywhere.`,
		Args:          cobra.NoArgs,
		SilenceErrors: true,
		SilenceUsage:  true,
		RunE: func(c *cobra.Command, _ []string) error {
			fmt.Fprint(c.ErrOrStderr(), c.UsageString())
			return &ExitError{Code: ExitUsage}
		},
	}
	top.SetUsageTemplate(UsageTemplate)
	top.SetHelpTemplate(HelpTemplate)
	top.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return r.finish(c, usageError{err.Error()}) })
	top.PersistentFlags().BoolVar(&r.json, "json", false, "print the API's JSON, for scripts")
	top.PersistentFlags().StringVar(&r.url, "url", "", "where Taskloom serves HTTP (default $TASKLOOM_URL)")
	add := func(c *cobra.Command, run func(args []string) error) *cobra.Command {
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(c *cobra.Command, args []string) error {
			r.ctx, r.out, r.errOut = c.Context(), c.OutOrStdout(), c.ErrOrStderr()
			return r.finish(c, run(args))
		}
		top.AddCommand(c)
		return c
	}
	addCmd := add(&cobra.Command{Use: "add FILE...", Short: "add text or Markdown files as documents",
		Long: "Each file is one document, titled by its first Markdown heading or else its name.",
		Example: `  taskloom knowledge add docs/runbook.md
  taskloom knowledge add --room discord:123 notes/*.txt`}, func(args []string) error { return r.addKnowledge(args, room, title) })
	addCmd.Flags().StringVar(&room, "room", "", "recall the documents only in this room, e.g. discord:123 (default: everywhere)")
	addCmd.Flags().StringVar(&title, "title", "", "the title, for a single file (default: its first heading or name)")
	add(&cobra.Command{Use: "list", Aliases: []string{"ls"}, Short: "the documents, newest first"}, func(args []string) error { return r.listKnowledge(args, room) }).
		Flags().StringVar(&room, "room", "", "only this room's documents")
	add(&cobra.Command{Use: "rm ID", Aliases: []string{"delete"}, Short: "delete a document and its passages"}, r.removeKnowledge)
	return top
}

// TitleOf is the title a file's document gets: its first Markdown ATX
// heading ("# Runbook", "## Restarting ##": one to six #, then a space),
// or else the file's name without its extension.
func TitleOf(path string, text string) string {
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		hashes := len(line) - len(strings.TrimLeft(line, "#"))
		if hashes < 1 || hashes > 6 || (len(line) > hashes && line[hashes] != ' ' && line[hashes] != '\t') {
			continue
		}
		t := strings.TrimSpace(line[hashes:])
		if closing := strings.TrimRight(t, "#"); closing != t && (closing == "" || strings.HasSuffix(closing, " ")) {
			t = strings.TrimSpace(closing)
		}
		if t != "" {
			return t
		}
	}
	base := filepath.Base(path)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

func (r *runner) addKnowledge(files []string, room, title string) error {
	if len(files) == 0 {
		return usagef("add takes one or more files, e.g. `taskloom knowledge add runbook.md`")
	}
	if title != "" && len(files) > 1 {
		return usagef("--title names one document; %d files were given", len(files))
	}
	// Every file is read and checked before anything is sent, so a bad
	// one among many adds none.
	texts := make([]string, len(files))
	for i, path := range files {
		st, err := os.Stat(path)
		switch {
		case err != nil:
			return usagef("cannot read %s: %v", path, err)
		case st.IsDir():
			return usagef("%s is a directory; name its files", path)
		case st.Size() > MaxKnowledgeBytes:
			return usagef("%s is %d bytes; a document may be at most %d (4 MiB)", path, st.Size(), MaxKnowledgeBytes)
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return usagef("cannot read %s: %v", path, err)
		}
		if !utf8.Valid(raw) || strings.ContainsRune(string(raw), 0) {
			return usagef("%s is not text (UTF-8): add text or Markdown files", path)
		}
		if strings.TrimSpace(string(raw)) == "" {
			return usagef("%s is empty", path)
		}
		texts[i] = string(raw)
	}
	if err := r.connect(); err != nil {
		return err
	}
	for i, path := range files {
		t := title
		if t == "" {
			t = TitleOf(path, texts[i])
		}
		var d document
		raw, err := r.c.call(r.ctx, "POST", "/api/knowledge", map[string]string{"title": t, "text": texts[i], "room": room}, &d)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if r.json {
			if err := r.printJSON(raw); err != nil {
				return err
			}
			continue
		}
		noun := "passages"
		if d.Passages == 1 {
			noun = "passage"
		}
		fmt.Fprintf(r.out, "Added document %d %q from %s: %d %s.\n", d.ID, clean(d.Title), path, d.Passages, noun)
	}
	return nil
}

func (r *runner) listKnowledge(args []string, room string) error {
	if len(args) > 0 {
		return usagef("list takes no arguments (got %q)", args[0])
	}
	if err := r.connect(); err != nil {
		return err
	}
	var body struct {
		Documents []document `json:"documents"`
	}
	path := "/api/knowledge"
	if room != "" {
		path += "?room=" + url.QueryEscape(room)
	}
	raw, err := r.c.call(r.ctx, "GET", path, nil, &body)
	if err != nil {
		return err
	}
	if r.json {
		return r.printJSON(raw)
	}
	if len(body.Documents) == 0 {
		fmt.Fprintln(r.out, "No knowledge documents. Add one with: taskloom knowledge add FILE")
		return nil
	}
	tw := tabwriter.NewWriter(r.out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTITLE\tROOM\tPASSAGES\tBYTES\tADDED")
	for _, d := range body.Documents {
		where := d.Room
		if where == "" {
			where = "(everywhere)"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\n", d.ID, clean(d.Title), clean(where), d.Passages, d.Bytes, d.CreatedAt.UTC().Format("2006-01-02 15:04"))
	}
	return tw.Flush()
}

func (r *runner) removeKnowledge(args []string) error {
	if len(args) != 1 {
		return usagef("rm takes one document id, e.g. `taskloom knowledge rm 3`")
	}
	id, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil || id <= 0 {
		return usagef("%q is not a document id", args[0])
	}
	if err := r.connect(); err != nil {
		return err
	}
	raw, err := r.c.call(r.ctx, "DELETE", fmt.Sprintf("/api/knowledge/%d", id), nil, nil)
	if err != nil {
		return err
	}
	if r.json {
		return r.printJSON(raw)
	}
	fmt.Fprintf(r.out, "Deleted document %d.\n", id)
	return nil
}
