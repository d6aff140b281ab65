package sqlstore

import (
	"cmp"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/taskloom/taskloom/domain"
)

// Migration is one schema migration of a store: migrations/NNNN_name.sql.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// MigrationFiles reads the migrations/*.sql of fsys in version order. A
// file whose name does not start with a version number, or two files with
// the same version, are an error.
func MigrationFiles(fsys fs.FS) ([]Migration, error) {
	paths, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, path := range paths {
		name := strings.TrimPrefix(path, "migrations/")
		prefix, _, ok := strings.Cut(name, "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must start with a version number, as 0001_init.sql", name)
		}
		body, err := fs.ReadFile(fsys, path)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(body)})
	}
	slices.SortFunc(out, func(a, b Migration) int { return cmp.Compare(a.Version, b.Version) })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("migrations %s and %s have the same version", out[i-1].Name, out[i].Name)
		}
	}
	return out, nil
}

// ToApply returns the migrations of files that applied (the versions the
// database recorded) lacks, in order, or a *domain.NewerSchemaError when applied
// holds a version newer than every file: the one decision both stores'
// Migrate make before applying anything.
func ToApply(files []Migration, applied []int) ([]Migration, error) {
	known := 0
	if len(files) > 0 {
		known = files[len(files)-1].Version
	}
	done := map[int]bool{}
	newest := 0
	for _, v := range applied {
		done[v] = true
		newest = max(newest, v)
	}
	if newest > known {
		return nil, &domain.NewerSchemaError{Database: newest, Known: known}
	}
	var out []Migration
	for _, m := range files {
		if !done[m.Version] {
			out = append(out, m)
		}
	}
	return out, nil
}

// Latest is the version of the last of files (MigrationFiles), 0 for none:
// the schema a binary brings.
func Latest(files []Migration) int {
	if len(files) == 0 {
		return 0
	}
	return files[len(files)-1].Version
}
