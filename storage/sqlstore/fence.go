package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/panorama-io/panorama/storage"
)

// ownersTable holds, per cluster, the epoch of its current owner
// (storage.Owner). Both taking ownership and checking it run in a group's
// transaction, holding the revision counter, and Own writes the counter's
// row (barrier): every write transaction of every process serializes
// there, so a write sees the epoch of the last Own committed before it,
// and none commits after an Own it missed, on another node of a
// multi-primary cluster either.
const ownersTable = "panorama_owners"

type ownerRow struct {
	Cluster string `gorm:"column:cluster;primaryKey"`
	Epoch   int64  `gorm:"column:epoch"`
}

func (ownerRow) TableName() string { return ownersTable }

var _ storage.Owner = (*Store)(nil)

// Own implements storage.Owner.
func (s *Store) Own(ctx context.Context, cluster string) (int64, error) {
	if err := validateCluster(cluster); err != nil {
		return 0, err
	}
	var epoch int64
	// Unfenced itself: taking over is what fences. Ahead of other
	// clusters' writes: see queue.
	_, err := s.await(ctx, &batch{cluster: cluster, epoch: storage.Unfenced, first: true, fn: func(tx *gorm.DB, _ *pending, _ int64, _ storedRows) (int64, error) {
		if err := barrier(tx); err != nil {
			return 0, err
		}
		current, err := ownerEpoch(tx, cluster)
		if err != nil {
			return 0, err
		}
		if current == storage.NeverOwned {
			epoch = 1
			err = tx.Create(&ownerRow{Cluster: cluster, Epoch: epoch}).Error
		} else {
			epoch = current + 1
			err = tx.Model(&ownerRow{}).Where("cluster = ?", cluster).Update("epoch", epoch).Error
		}
		return 0, err
	}})
	return epoch, err
}

// Epochs implements storage.Owner. A plain read will do: the deletes of a
// sweep compare these epochs with the current ones in their transactions,
// where an epoch that a lagging read missed only makes them keep more.
func (s *Store) Epochs(ctx context.Context) (map[string]int64, error) {
	var rows []ownerRow
	if err := s.db.WithContext(ctx).Find(&rows).Error; err != nil {
		return nil, err
	}
	epochs := make(map[string]int64, len(rows))
	for _, r := range rows {
		epochs[r.Cluster] = r.Epoch
	}
	return epochs, nil
}

// ownerEpoch is the cluster's current owner epoch, storage.NeverOwned when
// none took it over.
func ownerEpoch(tx *gorm.DB, cluster string) (int64, error) {
	var row ownerRow
	err := tx.Where("cluster = ?", cluster).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return storage.NeverOwned, nil
	}
	return row.Epoch, err
}

// ownerEpochs are the current owner epochs of clusters, each
// storage.NeverOwned that none took over; one statement.
func ownerEpochs(tx *gorm.DB, clusters []string) (map[string]int64, error) {
	epochs := make(map[string]int64, len(clusters))
	if len(clusters) == 0 {
		return epochs, nil
	}
	var rows []ownerRow
	if err := tx.Where("cluster IN ?", clusters).Find(&rows).Error; err != nil {
		return nil, err
	}
	for _, c := range clusters {
		epochs[c] = storage.NeverOwned
	}
	for _, r := range rows {
		epochs[r.Cluster] = r.Epoch
	}
	return epochs, nil
}

// checkFence refuses b when it carries an owner epoch that is not its
// cluster's current one, as epochs (from ownerEpochs) have it. tx holds
// the revision counter.
func checkFence(b *batch, epochs map[string]int64) error {
	if b.epoch == storage.Unfenced {
		return nil
	}
	current, ok := epochs[b.cluster]
	if !ok {
		return fmt.Errorf("the owner epoch of %q was not read", b.cluster)
	}
	if current != b.epoch {
		return &storage.FencedError{Cluster: b.cluster, Epoch: b.epoch, Current: current}
	}
	return nil
}
