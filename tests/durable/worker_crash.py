"""Child process: commit DDL in a loop until it is killed."""

from __future__ import annotations

import random
import sys

import almanac
from almanac import ColumnDef, ColumnType
from tests.durable.support import table


def main() -> None:
    target, seed = sys.argv[1], int(sys.argv[2])
    rng = random.Random(seed)
    with almanac.connect(target, delay_ms=0, max_clock_skew_ms=0) as cat:
        print("ready", flush=True)
        n = 0
        while True:
            n += 1
            names = [t.name for t in cat.catalog().tables()]
            choice = rng.random()
            if not names or choice < 0.4:
                commands: list[almanac.Command] = [table(f"S{seed}_{n}")]
            elif choice < 0.7:
                commands = [
                    almanac.AddColumns(
                        table=rng.choice(names),
                        columns=(ColumnDef(name=f"C{n}", type=ColumnType.INT32),),
                    )
                ]
            elif choice < 0.85:
                commands = [
                    almanac.CreateIndex(
                        name=f"I{seed}_{n}", table=rng.choice(names), columns=("V",)
                    )
                ]
            else:
                commands = [almanac.DropTable(rng.choice(names)), table(f"S{seed}_{n}")]
            cat.execute(commands)


if __name__ == "__main__":
    main()
