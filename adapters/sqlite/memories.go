package sqlite

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/taskloom/taskloom/adapters/sqlstore"
	"github.com/taskloom/taskloom/plugin"
)

// SaveMemory stores a chat message once: a redelivery (same platform and
// message ID) returns the stored message and false.
func (s *Store) SaveMemory(ctx context.Context, m plugin.Memory) (plugin.Memory, bool, error) {
	plugin.CleanMemory(&m)
	m.CreatedAt = plugin.UTC(m.CreatedAt)
	stored, err := sqlstore.ScanMemory(s.write.QueryRowContext(ctx, sqlInsertMemory, sqlstore.MemoryArgs(m, timeArg)...))
	if err == nil {
		return stored, true, nil
	}
	if !isNoRows(err) || m.MessageID == "" {
		return plugin.Memory{}, false, fmt.Errorf("save memory: %w", err)
	}
	stored, err = sqlstore.ScanMemory(s.read.QueryRowContext(ctx, sqlMemoryByMessage, m.Platform, m.MessageID))
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
	out, err := collect(ctx, s.read, sqlRecentMemories, []any{room, limit}, sqlstore.ScanMemory)
	if err != nil {
		return nil, fmt.Errorf("recent memories of %s: %w", room, err)
	}
	slices.Reverse(out)
	return out, nil
}

// PruneMemories deletes the memories created before before, and those
// with no time.
func (s *Store) PruneMemories(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.write.ExecContext(ctx, sqlPruneMemories, timeArg(plugin.UTC(before)))
	if err != nil {
		return 0, fmt.Errorf("prune memories before %s: %w", before.Format(time.RFC3339), err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("prune memories: %w", err)
	}
	return n, nil
}
