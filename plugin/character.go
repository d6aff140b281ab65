package plugin

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// Character is the bot's persona, in the shape of an elizaOS character
// file: name, system prompt, bio, style and settings. Fields Taskloom does
// not use are kept in Settings or ignored.
type Character struct {
	Name     string         `json:"name"`
	System   string         `json:"system"`
	Bio      Lines          `json:"bio"`
	Style    Style          `json:"style"`
	Settings map[string]any `json:"settings"`
}

// Style holds the character's style hints.
type Style struct {
	All  Lines `json:"all"`
	Chat Lines `json:"chat"`
	Post Lines `json:"post"`
}

// Lines is a string or a list of strings in a character file.
type Lines []string

// UnmarshalJSON accepts "text" or ["a", "b"].
func (l *Lines) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*l = Lines{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("want a string or a list of strings: %w", err)
	}
	*l = many
	return nil
}

// DefaultCharacter is who the bot is without a character file.
func DefaultCharacter() Character {
	return Character{
		Name:   "Taskloom",
		System: "You are Taskloom, a bot that runs long, multi-step tasks for a team and reports their progress in chat. You are brief, exact and honest about what you did.",
		Bio:    Lines{"Runs agent tasks from chat, one careful step at a time."},
	}
}

// LoadCharacter reads an elizaOS-shaped character file. A file without a
// name or system prompt gets the defaults for them.
func LoadCharacter(path string) (Character, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Character{}, fmt.Errorf("load character: %w", err)
	}
	var c Character
	if err := json.Unmarshal(raw, &c); err != nil {
		return Character{}, fmt.Errorf("load character %s: %w", path, err)
	}
	def := DefaultCharacter()
	if strings.TrimSpace(c.Name) == "" {
		c.Name = def.Name
	}
	if strings.TrimSpace(c.System) == "" {
		c.System = def.System
	}
	return c, nil
}

// SystemPrompt is the system text for a model call: the system prompt,
// then the bio and style hints.
func (c Character) SystemPrompt() string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(c.System))
	if len(c.Bio) > 0 {
		b.WriteString("\n\nAbout you: " + strings.Join(c.Bio, " "))
	}
	style := append(append(Lines{}, c.Style.All...), c.Style.Chat...)
	if len(style) > 0 {
		b.WriteString("\n\nStyle: " + strings.Join(style, " "))
	}
	return b.String()
}
