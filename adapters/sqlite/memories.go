package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/taskloom/taskloom/plugin"
)

// SaveMemory stores a chat message once: a redelivery (same platform and
// message ID) returns the stored message and false.
func (s *Store) SaveMemory(ctx context.Context, m plugin.Memory) (plugin.Memory, bool, error) {
	plugin.CleanMemory(&m)
	m.CreatedAt = plugin.UTC(m.CreatedAt)
	stored, err := scanMemory(s.write.QueryRowContext(ctx, sqlInsertMemory, m.Platform, m.MessageID, m.Room,
		m.WorkspaceID, m.AuthorID, m.AuthorName, m.Text, m.FromBot, timeArg(m.CreatedAt)))
	if err == nil {
		return stored, true, nil
	}
	if !isNoRows(err) || m.MessageID == "" {
		return plugin.Memory{}, false, fmt.Errorf("save memory: %w", err)
	}
	stored, err = scanMemory(s.read.QueryRowContext(ctx, sqlMemoryByMessage, m.Platform, m.MessageID))
	if err != nil {
		return plugin.Memory{}, false, fmt.Errorf("save memory: read the stored message %s/%s: %w", m.Platform, m.MessageID, err)
	}
	return stored, false, nil
}

// RecentMemories lists a room's latest limit messages (all of them when
// limit <= 0), oldest first.
func (s *Store) RecentMemories(ctx context.Context, room string, limit int) ([]plugin.Memory, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.read.QueryContext(ctx, sqlRecentMemories, room, limit)
	if err != nil {
		return nil, fmt.Errorf("recent memories of %s: %w", room, err)
	}
	defer rows.Close()
	var out []plugin.Memory
	for rows.Next() {
		m, err := scanMemory(rows)
		if err != nil {
			return nil, fmt.Errorf("recent memories of %s: %w", room, err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("recent memories of %s: %w", room, err)
	}
	slices.Reverse(out)
	return out, nil
}

func scanMemory(row scanner) (plugin.Memory, error) {
	var m plugin.Memory
	var at sql.NullInt64
	err := row.Scan(&m.ID, &m.Platform, &m.MessageID, &m.Room, &m.WorkspaceID, &m.AuthorID,
		&m.AuthorName, &m.Text, &m.FromBot, &at)
	m.CreatedAt = timeOf(at)
	return m, err
}
