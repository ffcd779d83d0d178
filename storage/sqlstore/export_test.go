package sqlstore

import "gorm.io/gorm"

// GormDB lets the external tests record and explain the statements a Store
// runs.
func GormDB(s *Store) *gorm.DB { return s.db }
