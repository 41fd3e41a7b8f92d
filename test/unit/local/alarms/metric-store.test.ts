import { AlarmDefinitionError } from '../../../../lib/local/alarms/errors';
import { MetricStore, aggregate, metricKey } from '../../../../lib/local/alarms/metric-store';

describe('Function: metricKey', () => {
  it('when the dimensions are given in another order, it gives the same key', () => {
    // Act
    const a = metricKey({ namespace: 'AWS/SQS', name: 'N', dimensions: { b: '2', a: '1' } });
    const b = metricKey({ namespace: 'AWS/SQS', name: 'N', dimensions: { a: '1', b: '2' } });

    // Assess
    expect(a).toBe(b);
    expect(a).toBe('AWS/SQS|N|a=1,b=2');
  });

  it('when the namespace, name or a dimension differs, the keys differ', () => {
    const base = { namespace: 'tenang', name: 'JobRetried', dimensions: { service: 'payment-consumer' } };
    const keys = [
      base,
      { ...base, namespace: 'other' },
      { ...base, name: 'JobSucceeded' },
      { ...base, dimensions: { service: 'relay' } },
      { ...base, dimensions: {} },
    ].map(metricKey);
    expect(new Set(keys).size).toBe(keys.length);
  });
});

describe('Function: aggregate', () => {
  const values = [4, 1, 3, 2];

  it.each([
    ['SampleCount', 4],
    ['Sum', 10],
    ['Average', 2.5],
    ['Minimum', 1],
    ['Maximum', 4],
    ['p50', 2],
    ['p99', 4],
    ['p100', 4],
    ['p0.1', 1],
  ])('when the statistic is %s, it gives %d', (statistic, expected) => {
    expect(aggregate(values, statistic)).toBe(expected);
  });

  it('when the period has no values, it gives undefined (missing data)', () => {
    expect(aggregate([], 'Sum')).toBeUndefined();
    expect(aggregate([], 'Unsupported')).toBeUndefined();
  });

  it.each(['tm90', 'p101', 'IQM'])('when the statistic is %s, it fails loudly', (statistic) => {
    expect(() => aggregate([1], statistic)).toThrow(AlarmDefinitionError);
    expect(() => aggregate([1], statistic)).toThrow(`statistic ${statistic} is not supported locally`);
  });
});

describe('Class: MetricStore', () => {
  const id = { namespace: 'tenang', name: 'JobRetried', dimensions: { service: 'payment-consumer' } };

  it('when samples are recorded, values gives those of the metric in [from, to)', () => {
    // Prepare
    const store = new MetricStore();
    store.record({ ...id, value: 1 }, 0);
    store.record({ ...id, value: 2 }, 1_000);
    store.record({ ...id, value: 3 }, 2_000);
    store.record({ ...id, dimensions: { service: 'relay' }, value: 9 }, 1_000);

    // Act + Assess
    expect(store.values(id, 1_000, 2_000)).toEqual([2]);
    expect(store.values(id, 0, 3_000)).toEqual([1, 2, 3]);
    expect(store.values({ ...id, name: 'JobSucceeded' }, 0, 3_000)).toEqual([]);
  });

  it('when listing, it gives one series per metric with a copy of its identity', () => {
    // Prepare
    const store = new MetricStore();
    const dimensions: Record<string, string> = { service: 'payment-consumer' };
    store.record({ ...id, dimensions, value: 1 }, 0);
    store.record({ ...id, dimensions, value: 2 }, 5);
    dimensions.service = 'changed';

    // Act
    const all = [...store.all()];

    // Assess
    expect(all).toEqual([
      [
        metricKey(id),
        {
          id,
          samples: [
            { at: 0, value: 1 },
            { at: 5, value: 2 },
          ],
        },
      ],
    ]);
  });

  it('when pruned, it forgets the samples recorded before the cut', () => {
    // Prepare
    const store = new MetricStore();
    for (const at of [0, 1_000, 2_000]) store.record({ ...id, value: at }, at);

    // Act
    store.prune(1_000);
    const afterFirst = store.values(id, 0, 10_000);
    store.prune(5_000);

    // Assess
    expect(afterFirst).toEqual([1_000, 2_000]);
    expect(store.values(id, 0, 10_000)).toEqual([]);
  });
});
