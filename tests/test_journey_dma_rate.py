"""Notebook 05's envelope and 04b's puzzle floors stream at one rate: DMA engines x engine rate, capped by the
core's share of chip HBM bandwidth (the same cap the scheduler applies to transfers that touch HBM)."""
import pytest

import trnsim
from trnsim.course.exercises import puzzles
from trnsim.models import journey


@pytest.mark.parametrize("target", ["trn1", "inf2", "trn2", "trn3"])
def test_rate_is_engines_capped_by_hbm_share(target):
    t = trnsim.target(target)
    engines = t.core.dma_engines * t.core.dma_engine_gbytes_per_s
    share = t.chip.hbm_gbytes_per_s_per_core
    assert journey.dma_gbytes_per_s(target) == pytest.approx(min(engines, share))
    assert journey.dma_gbytes_per_s(target, cores=2) == pytest.approx(2 * min(engines, share))


def test_trn2_is_hbm_bound_and_trn1_engine_bound():
    assert journey.dma_gbytes_per_s("trn2") < trnsim.target("trn2").core.dma_engines * \
        trnsim.target("trn2").core.dma_engine_gbytes_per_s
    assert journey.dma_gbytes_per_s("trn1") == pytest.approx(272)


def test_envelope_uses_the_capped_rate():
    env = journey.envelope(0, 362_500_000, target="trn2")
    assert env.dma_us == pytest.approx(1000.0)   # 362.5 MB at 362.5 GB/s


def test_puzzle_floors_use_the_same_function():
    assert puzzles.dma_gbytes_per_s is journey.dma_gbytes_per_s
