package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// readmeMaxLines is how long the README may grow: it is the newcomer's
// path, and everything else belongs in a guide under docs/.
const readmeMaxLines = 250

// documents are the files whose links and wording are checked, relative
// to the repository's root.
func documents(t *testing.T) []string {
	t.Helper()
	guides, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(guides) == 0 {
		t.Fatal("no guides found in docs/")
	}
	files := []string{"README.md", "docs/openapi.yaml"}
	for _, g := range guides {
		files = append(files, filepath.Join("docs", g))
	}
	return files
}

func read(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", path))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestReadmeIsShort(t *testing.T) {
	t.Parallel()
	if n := strings.Count(read(t, "README.md"), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, at most %d: move the detail into a guide under docs/", n, readmeMaxLines)
	}
}

// missingDocument are the marks of a reference to the product brief, which
// is not in the repository (spelt here so that a search for them finds no
// reference in this file either).
var missingDocument = []*regexp.Regexp{regexp.MustCompile(`\bPRO` + `DUCT\b`), regexp.MustCompile("\u00a7")}

// TestNoMissingDocuments refuses references to a document the repository
// does not hold: the product brief and its numbered sections live
// elsewhere, so what they say must be said in docs/ and cited there.
func TestNoMissingDocuments(t *testing.T) {
	t.Parallel()
	for _, path := range repositoryText(t) {
		for i, line := range strings.Split(read(t, path), "\n") {
			for _, mark := range missingDocument {
				// A section of an RFC is a document anyone can read.
				if mark.MatchString(line) && !strings.Contains(line, "RFC ") {
					t.Errorf("%s:%d cites a document that is not in the repository (%q): %s", path, i+1, mark, strings.TrimSpace(line))
					break
				}
			}
		}
	}
}

// textFiles are the kinds of file that hold prose people read: code
// comments, SQL, templates, guides, manifests.
var textFiles = map[string]bool{".go": true, ".sql": true, ".tmpl": true, ".md": true, ".yaml": true, ".yml": true,
	".html": true, ".js": true, ".css": true, ".json": true, ".sh": true, "": true}

// repositoryText lists the text files of the repository, relative to its
// root: the guides, and every file of code, SQL and configuration.
func repositoryText(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == "node_modules" || name == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !textFiles[filepath.Ext(path)] || !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel("..", path)
		if err != nil {
			return err
		}
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 100 {
		t.Fatalf("found only %d text files in the repository", len(out))
	}
	return out
}

var (
	fence      = regexp.MustCompile("(?ms)^ *```.*?^ *```")
	codeSpan   = regexp.MustCompile("`[^`\n]*`")
	link       = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	headingRE  = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
	externalRE = regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`)
)

// links returns the targets of the Markdown links in text, outside code.
func links(text string) []string {
	text = fence.ReplaceAllString(text, "")
	text = codeSpan.ReplaceAllString(text, "``")
	var out []string
	for _, m := range link.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// slug is the anchor GitHub gives a heading: lower case, spaces to
// hyphens, punctuation other than hyphens and underscores dropped.
func slug(heading string) string {
	heading = strings.ReplaceAll(heading, "`", "")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of a Markdown file's headings.
func anchors(text string) map[string]bool {
	text = fence.ReplaceAllString(text, "")
	out := map[string]bool{}
	for _, m := range headingRE.FindAllStringSubmatch(text, -1) {
		out[slug(m[1])] = true
	}
	return out
}

// TestLinksResolve checks that every relative link in the README and the
// guides names a file in the repository and, into a Markdown file, one of
// its headings.
func TestLinksResolve(t *testing.T) {
	t.Parallel()
	checked := 0
	for _, path := range documents(t) {
		if !strings.HasSuffix(path, ".md") {
			continue
		}
		text := read(t, path)
		for _, target := range links(text) {
			if externalRE.MatchString(target) {
				continue
			}
			checked++
			file, anchor, _ := strings.Cut(target, "#")
			resolved := path // a bare "#anchor" is into the same file
			if file != "" {
				resolved = filepath.Join(filepath.Dir(path), file)
				if strings.HasPrefix(filepath.ToSlash(resolved), "../") {
					t.Errorf("%s: link %q leaves the repository", path, target)
					continue
				}
				if _, err := os.Stat(filepath.Join("..", resolved)); err != nil {
					t.Errorf("%s: link %q: %s is not in the repository", path, target, resolved)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(resolved, ".md") {
				if !anchors(read(t, resolved))[anchor] {
					t.Errorf("%s: link %q: %s has no heading #%s", path, target, resolved, anchor)
				}
			}
		}
	}
	if checked == 0 {
		t.Error("found no relative links at all: the link pattern is broken")
	}
}

func TestSlug(t *testing.T) {
	t.Parallel()
	for heading, want := range map[string]string{
		"What an operator sets":                        "what-an-operator-sets",
		"The prompt's stable prefix":                   "the-prompts-stable-prefix",
		"Driving a running Taskloom: `taskloom tasks`": "driving-a-running-taskloom-taskloom-tasks",
		"The whole run: `scripts/test`":                "the-whole-run-scriptstest",
	} {
		if got := slug(heading); got != want {
			t.Errorf("slug(%q) = %q, want %q", heading, got, want)
		}
	}
}
