/**
 * Degrade-mode admission (B3): whether work of a criticality goes ahead while the stage is
 * degraded. Critical work always continues; deferrable work waits; sheddable work is refused
 * at the producer (a consumer that already holds it defers it instead).
 */
import type { Criticality } from '../config/schema';

/** What to do with one job. */
export type Admission = 'accept' | 'defer' | 'shed';

/** Decides admission for work of `criticality` given the degrade flag. */
export function admit(criticality: Criticality, degraded: boolean): Admission {
  if (!degraded || criticality === 'critical') return 'accept';
  return criticality === 'deferrable' ? 'defer' : 'shed';
}
