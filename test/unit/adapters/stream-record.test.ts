import { sequenceNumberOf, streamItemKey } from '../../../lib/adapters/aws/stream-record';
import { streamRecord } from '../../helpers/dynamodb-stream';

describe('Function: streamItemKey', () => {
  it.each([
    ['a string key', { invoiceId: 'inv-7' }, 'inv-7'],
    ['a number key', { invoiceId: 42 }, '42'],
    ['no such key', { orderId: 'o-1' }, undefined],
  ])('when the record carries %s, it is read as text', (_what, keys, expected) => {
    // Prepare
    const record = streamRecord({ eventName: 'REMOVE', keys, oldImage: keys, sequenceNumber: '9' });

    // Act
    const key = streamItemKey(record, 'invoiceId');

    // Assess
    expect(key).toBe(expected);
    expect(sequenceNumberOf(record)).toBe('9');
  });
});
