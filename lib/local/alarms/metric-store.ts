/**
 * Metric datapoints as the local evaluator keeps them: a metric's identity, the samples recorded
 * per metric, and the statistics CloudWatch computes over one period's values.
 */
import { AlarmDefinitionError } from './errors';

/** A metric's identity: CloudWatch matches namespace, name and the exact set of dimensions. */
export interface MetricId {
  readonly namespace: string;
  readonly name: string;
  readonly dimensions: Readonly<Record<string, string>>;
}

/** One observed value of a metric. */
export interface MetricSample extends MetricId {
  readonly value: number;
}

/** The key under which a metric's samples are kept. */
export function metricKey(id: MetricId): string {
  const dims = Object.keys(id.dimensions)
    .sort()
    .map((k) => `${k}=${id.dimensions[k] ?? ''}`)
    .join(',');
  return `${id.namespace}|${id.name}|${dims}`;
}

/** A statistic over one period's values; undefined when there are none (missing data). */
export function aggregate(values: readonly number[], statistic: string): number | undefined {
  if (values.length === 0) return undefined;
  switch (statistic) {
    case 'SampleCount':
      return values.length;
    case 'Sum':
      return values.reduce((a, b) => a + b, 0);
    case 'Average':
      return values.reduce((a, b) => a + b, 0) / values.length;
    case 'Minimum':
      return Math.min(...values);
    case 'Maximum':
      return Math.max(...values);
  }
  const percentile = /^p(\d{1,2}(?:\.\d+)?|100)$/.exec(statistic);
  if (percentile === null) throw new AlarmDefinitionError(`statistic ${statistic} is not supported locally`);
  const sorted = [...values].sort((a, b) => a - b);
  // Nearest rank.
  const rank = Math.max(1, Math.ceil((Number(percentile[1]) / 100) * sorted.length));
  return sorted[rank - 1];
}

export interface Series {
  readonly id: MetricId;
  /** In recording order, which is time order. */
  readonly samples: { at: number; value: number }[];
}

/** Samples per metric, kept for as long as some alarm can still look at them. */
export class MetricStore {
  private readonly series = new Map<string, Series>();

  public record(sample: MetricSample, at: number): void {
    const key = metricKey(sample);
    let s = this.series.get(key);
    if (s === undefined) {
      s = {
        id: { namespace: sample.namespace, name: sample.name, dimensions: { ...sample.dimensions } },
        samples: [],
      };
      this.series.set(key, s);
    }
    s.samples.push({ at, value: sample.value });
  }

  /** Values of `id` recorded in [fromMs, toMs). */
  public values(id: MetricId, fromMs: number, toMs: number): number[] {
    const s = this.series.get(metricKey(id));
    if (s === undefined) return [];
    return s.samples.filter((x) => x.at >= fromMs && x.at < toMs).map((x) => x.value);
  }

  public all(): Iterable<[string, Series]> {
    return this.series.entries();
  }

  public prune(beforeMs: number): void {
    for (const s of this.series.values()) {
      const keep = s.samples.findIndex((x) => x.at >= beforeMs);
      s.samples.splice(0, keep < 0 ? s.samples.length : keep);
    }
  }
}
