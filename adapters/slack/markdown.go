package slack

import (
	"context"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	slackapi "github.com/slack-go/slack"

	"github.com/taskloom/taskloom/domain"
)

// Long summaries.
const (
	// MarkdownSummaryAfter is how long (in characters) a completed task's
	// summary must be to go in a markdown block, which Slack renders from
	// standard Markdown — headings, lists, tables, code — as the model
	// wrote it, instead of as escaped text in a section.
	MarkdownSummaryAfter = 300
	// maxMarkdown is what Slack takes in the markdown blocks of one
	// message, in all.
	maxMarkdown = 12000
	// summaryLabel is how render.Completed starts a summary: indented,
	// after a blank line.
	summaryLabel = "   Summary: "
	summaryTitle = "**Summary**\n\n"
)

// longSummaries returns the summaries of the tasks in ended that completed
// with one longer than MarkdownSummaryAfter, by task number. A task it
// cannot read keeps its summary in the message text only.
func (a *Adapter) longSummaries(ctx context.Context, ended []int64) map[int64]string {
	var out map[int64]string
	for _, n := range ended {
		t, err := a.rt.Store().GetTask(ctx, n)
		if err != nil {
			a.log.Warn("cannot read an ended task's summary; it stays in the text", "task", n, "err", err)
			continue
		}
		s := strings.TrimSpace(t.Summary)
		if t.Status != domain.StatusCompleted || utf8.RuneCountInString(s) <= MarkdownSummaryAfter {
			continue
		}
		if out == nil {
			out = map[int64]string{}
		}
		out[n] = s
	}
	return out
}

// summaryBlocks lays a message out as section blocks with the summary of
// each task in summaries taken out of the text and put in a markdown block
// of its own, where render.Completed wrote it: the indented lines from
// "Summary:" on, after the task's "✅ Task #N" line. The message's text
// field still carries everything as rendered. It returns nil when there is
// nothing to do, or when the markdown would pass what Slack takes in one
// message.
func summaryBlocks(text string, summaries map[int64]string) []slackapi.Block {
	if len(summaries) == 0 {
		return nil
	}
	lines := strings.Split(text, "\n")
	type cut struct {
		from, to int // lines[from:to] is the summary as rendered
		markdown string
	}
	var cuts []cut
	total := 0
	for i := 0; i < len(lines); i++ {
		n, ok := completedTitle(lines[i])
		summary, wanted := summaries[n]
		if !ok || !wanted {
			continue
		}
		from := -1
		for j := i + 1; j < len(lines) && from < 0; j++ {
			switch {
			case strings.HasPrefix(lines[j], summaryLabel):
				from = j
			case lines[j] != "" && !strings.HasPrefix(lines[j], " "):
				j = len(lines) // the next part began: no summary here
			}
		}
		if from < 0 {
			continue
		}
		to := from + 1
		for to < len(lines) && (lines[to] == "" || strings.HasPrefix(lines[to], " ")) {
			to++
		}
		for to > from+1 && lines[to-1] == "" {
			to--
		}
		md := summaryTitle + defuseMarkdown(summary)
		total += utf8.RuneCountInString(md)
		cuts = append(cuts, cut{from: from, to: to, markdown: md})
		i = to - 1
	}
	if len(cuts) == 0 || total > maxMarkdown {
		return nil
	}
	var blocks []slackapi.Block
	at := 0
	for _, c := range cuts {
		blocks = append(blocks, sectionBlocks(strings.Join(lines[at:c.from], "\n"))...)
		blocks = append(blocks, slackapi.NewMarkdownBlock("", c.markdown))
		at = c.to
	}
	return append(blocks, sectionBlocks(strings.Join(lines[at:], "\n"))...)
}

// completedTitle reads the task number of a completion's first line,
// "✅ Task #N …".
func completedTitle(line string) (int64, bool) {
	rest, ok := strings.CutPrefix(line, "✅ Task #")
	if !ok {
		return 0, false
	}
	end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
	if end < 0 {
		end = len(rest)
	}
	n, err := strconv.ParseInt(rest[:end], 10, 64)
	return n, err == nil && n > 0
}

// defuseMarkdown keeps a model's Markdown from pinging anyone once Slack
// renders it: a zero-width space goes after every < that opens a mention,
// a channel or a special token (<@…>, <#…>, <!…>), and after the @ of
// @channel, @here and @everyone. Control characters other than newlines
// and tabs are dropped; the Markdown itself is left as written.
func defuseMarkdown(s string) string {
	const zwsp = '\u200b'
	rs := []rune(s)
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range rs {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			continue
		}
		b.WriteRune(r)
		next := func(w string) bool {
			if i+1+len(w) > len(rs) {
				return false
			}
			return strings.EqualFold(string(rs[i+1:i+1+len(w)]), w)
		}
		switch {
		case r == '<' && (next("@") || next("#") || next("!")):
			b.WriteRune(zwsp)
		case r == '@' && (next("channel") || next("here") || next("everyone")):
			b.WriteRune(zwsp)
		}
	}
	return b.String()
}
