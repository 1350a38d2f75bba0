package volumemigration

// How a migration survives an interruption (a Ctrl-C, a killed provider, a lost connection):
//
// Every step is recorded before or after it is done, in AnnotationProgress (JSON, see
// progress) on the claim and, from the swap on, also on the new volume: the claim is deleted
// and made again during the swap, and the new volume is what survives that. The phases, in
// order:
//
//	copying   the temporary claim on the target class is made (its name is recorded first) and
//	          a copy pod copies the source (mounted read-only) into it while the workload runs;
//	          then the owners' replica counts are recorded, and only then are they scaled to 0.
//	stopped   the owners are scaled to 0; once no pod mounts the claim, a copy pod copies the
//	          delta and verifies every file's content (rsync --checksum --dry-run lists
//	          nothing); the claim to make again is recorded on the new volume.
//	swapping  both volumes get reclaim policy Retain (the one they had is recorded on each);
//	          the temporary claim and the source claim are deleted; the new volume's claimRef
//	          is pointed at the claim's name without a UID, and the claim is made again from
//	          the record, bound to it by volumeName.
//	starting  the new volume's reclaim policy is restored, the source volume is marked
//	          (AnnotationMigratedTo), the owners are scaled back and waited for until Ready.
//	done      kept on the claim: a later apply (state lost) or an import adopts it.
//
// An apply that finds a phase recorded resumes from it: every step checks what is already done
// (the temporary claim exists, the policy is recorded, the claim is bound to the new volume).
// An apply that fails before the swap rolls back in the same run (copy pods and temporary
// claim removed, owners scaled back to the recorded counts, the record removed); from the swap
// on, the copy is verified and the workload stopped, so a failure leaves the record for the
// next apply to finish the swap. The source volume is never deleted unless delete_source says
// so. Copy pods carry AnnotationHeartbeat, renewed every 3 s; a run removes the copy pods in
// its namespace whose heartbeat is older than 15 s (their provider is gone) before it starts.
//
// restore_on_destroy is the same Migrator with Spec.Volume set (RestoreSpec): the temporary
// claim is bound by name to the kept source volume instead of being provisioned, so the phases,
// records and resumption are the migration's, in the other direction. The source volume's
// recorded reclaim policy is restored when the claim is back on it (restorePolicy, as for a new
// volume); finishRestore then removes its mark, deletes the volume the claim left when a
// provisioner made it (DeleteSource) and removes the record from the claim. Read keeps the
// resource in state while a volume records a swap of its claim (the claim deleted, not made
// again yet), so an interrupted destroy is finished by the next.
