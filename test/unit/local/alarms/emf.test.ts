import { EmfFormatError, parseEmf } from '../../../../lib/local/alarms/emf';

describe('Function: parseEmf', () => {
  it('when Powertools wrote repeated values as an array, it gives one sample per value', () => {
    // Prepare: a line as Powertools Metrics prints it
    const line =
      '{"_aws":{"Timestamp":1795950001147,"CloudWatchMetrics":[{"Namespace":"tenang","Dimensions":[["service"]],"Metrics":[{"Name":"JobSucceeded","Unit":"Count"},{"Name":"JobRetried","Unit":"Count"}]}]},"service":"payment-consumer","JobSucceeded":[1,1],"JobRetried":1}';

    // Act
    const samples = parseEmf(line);

    // Assess
    const dimensions = { service: 'payment-consumer' };
    expect(samples).toEqual([
      { namespace: 'tenang', name: 'JobSucceeded', dimensions, value: 1 },
      { namespace: 'tenang', name: 'JobSucceeded', dimensions, value: 1 },
      { namespace: 'tenang', name: 'JobRetried', dimensions, value: 1 },
    ]);
  });

  it('when a directive has several dimension sets, it gives the values under each', () => {
    // Prepare
    const line = JSON.stringify({
      _aws: {
        CloudWatchMetrics: [
          {
            Namespace: 'tenang',
            Dimensions: [['service', 'consumer'], ['service']],
            Metrics: [{ Name: 'Paused' }],
          },
        ],
      },
      service: 'flag-reconciler',
      consumer: 'payment-consumer',
      Paused: 1,
    });

    // Act
    const samples = parseEmf(line);

    // Assess
    expect(samples.map((s) => s.dimensions)).toEqual([
      { service: 'flag-reconciler', consumer: 'payment-consumer' },
      { service: 'flag-reconciler' },
    ]);
  });

  it('when the line is a log line, it gives nothing', () => {
    expect(parseEmf('{"level":"INFO","message":"ok"}')).toEqual([]);
    expect(parseEmf('START RequestId: 1 "_aws" {not json')).toEqual([]);
  });

  it('when a dimension has no value, it throws EmfFormatError', () => {
    // Prepare
    const line = JSON.stringify({
      _aws: {
        CloudWatchMetrics: [{ Namespace: 'tenang', Dimensions: [['service']], Metrics: [{ Name: 'X' }] }],
      },
      X: 1,
    });

    // Act + Assess
    expect(() => parseEmf(line)).toThrow(EmfFormatError);
    expect(() => parseEmf(line)).toThrow('metric X: dimension service has no string value');
  });
});
