import type { Criticality } from '../../../lib/config/schema';
import { admit, type Admission } from '../../../lib/core/admission';

describe('Function: admit', () => {
  describe('when the stage is not degraded', () => {
    it.each<Criticality>(['critical', 'deferrable', 'sheddable'])(
      'when the work is %s, it accepts it',
      (criticality) => {
        // Act
        const admission = admit(criticality, false);

        // Assess
        expect(admission).toBe('accept');
      },
    );
  });

  describe('when the stage is degraded', () => {
    it.each<{ criticality: Criticality; expected: Admission }>([
      { criticality: 'critical', expected: 'accept' },
      { criticality: 'deferrable', expected: 'defer' },
      { criticality: 'sheddable', expected: 'shed' },
    ])('when the work is $criticality, it answers $expected', ({ criticality, expected }) => {
      // Act
      const admission = admit(criticality, true);

      // Assess
      expect(admission).toBe(expected);
    });
  });
});
