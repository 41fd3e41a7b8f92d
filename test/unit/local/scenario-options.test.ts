import { resolveScenarioOptions, ScenarioOptionsError } from '../../../lib/local/scenario';

describe('Module: scenario', () => {
  describe('Function: resolveScenarioOptions', () => {
    it('when only the scenario is named, duration and rate come from its definition', () => {
      // Act
      const resolved = resolveScenarioOptions({ scenario: 'smoke' });

      // Assess
      expect(resolved).toMatchObject({ durationSeconds: 30, ratePerSecond: 2 });
      expect(resolved.definition.name).toBe('smoke');
    });

    it('when nothing is named, it runs the default scenario', () => {
      // Act & Assess
      expect(resolveScenarioOptions({}).definition.name).toBe('default');
    });

    it('when the scenario is unknown and the rate too high, one error lists both problems', () => {
      // Act
      const attempt = (): unknown => resolveScenarioOptions({ scenario: 'nope', ratePerSecond: 50 });

      // Assess
      expect(attempt).toThrow(ScenarioOptionsError);
      expect(attempt).toThrow(
        /unknown scenario 'nope'; choose one of: default, smoke, steady\n--rate must be/,
      );
    });

    it('when the duration is too short for the incidents, it is refused', () => {
      // Act & Assess
      expect(() => resolveScenarioOptions({ scenario: 'default', durationSeconds: 5 })).toThrow(
        /--duration must be between 10/,
      );
    });
  });
});
