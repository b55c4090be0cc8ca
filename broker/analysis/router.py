from typing import Annotated

from fastapi import APIRouter, Form, Request

from broker.analysis.schemas import Report
from broker.columns.roles import NAMES_MAX_LENGTH, parse_names
from broker.errors import FAULT_EXAMPLES, Unprocessable, responses
from broker.intake.tables import counting_limits, open_upload
from broker.metrics.report import ReportOptions, SudaOptions, report_of
from broker.metrics.risk import DEFAULT_ALPHA, DEFAULT_BETA, QirThresholds
from broker.metrics.suda import BROKER_MAX_UNIQUE_BITS, DEFAULT_DIS_FRACTION
from broker.web.deps import RateLimitedCaller, SettingsDep, SpooledUpload

router = APIRouter(prefix="/v1/analyze", tags=["Measurement"])


@router.post(
    "",
    response_model=Report,
    responses=responses(400, 401, 403, 413, 422, 429, 503, 507, examples=FAULT_EXAMPLES),
    summary="Measure a dataset (no policy, nothing stored)",
    description="Mmaq of every attribute and of the quasi-identifiers, k, l, t, the "
    "re-identification risks and the riskiest column combinations, as `fedbroker analyze` "
    "reports them; with `suda`, the SUDA and DIS-SUDA figures of the quasi-identifiers (the "
    "object `fedbroker analyze --suda --format json` gives, without its list of every record). "
    "Any member or admin; nothing is kept.",
)
def analyze_dataset(
    _: RateLimitedCaller,
    settings: SettingsDep,
    request: Request,
    upload: SpooledUpload,
    quasi_identifiers: Annotated[
        str,
        Form(
            description="Comma-separated column names an outsider may know, e.g. `Age,Gender`. "
            "Empty: the broker finds them",
            max_length=NAMES_MAX_LENGTH,
        ),
    ] = "",
    sensitive: Annotated[
        str,
        Form(
            description="Comma-separated column names whose values are to be protected, e.g. "
            "`Disease`. Empty: none",
            max_length=NAMES_MAX_LENGTH,
        ),
    ] = "",
    combinations: Annotated[int, Form(ge=0, le=4, description="Largest combination")] = 3,
    alpha: Annotated[float, Form(gt=0, le=100)] = DEFAULT_ALPHA,
    beta: Annotated[float, Form(ge=0, le=100)] = DEFAULT_BETA,
    sampling_fraction: Annotated[
        float | None,
        Form(
            gt=0,
            le=1,
            description="The dataset's share of its population: adds the population section "
            "(population uniqueness, individual risk); needs quasi_identifiers",
        ),
    ] = None,
    weights: Annotated[
        str | None,
        Form(
            description="A column of sampling weights (people each row stands for): individual "
            "risk uses them; without sampling_fraction the fraction is rows / their sum",
            max_length=NAMES_MAX_LENGTH,
        ),
    ] = None,
    suda: Annotated[
        bool,
        Form(
            description="Add SUDA (minimal sample uniques, SUDA and DIS-SUDA scores, each key's "
            "contribution and the 10 riskiest records by row) of the quasi-identifiers, as "
            "sdcMicro's suda2 computes them; needs quasi_identifiers"
        ),
    ] = False,
    suda_dis_fraction: Annotated[
        float | None,
        Form(
            gt=0,
            le=1,
            description="The sampling fraction DIS-SUDA assumes (default 0.01); needs suda",
        ),
    ] = None,
    suda_max_msu: Annotated[
        int | None,
        Form(
            ge=1,
            le=64,
            description="The largest MSU searched, in keys (default: every size); a table with "
            "many quasi-identifiers needs it to stay within the search's bounds; needs suda",
        ),
    ] = None,
) -> Report:
    table = open_upload(
        upload, settings, parse_names(quasi_identifiers), parse_names(sensitive), None
    )
    roles = table.roles
    suda_options = _suda_options(suda, suda_dis_fraction, suda_max_msu, roles.quasi_identifiers)
    try:
        with request.app.state.monitoring.timed("analyze"), counting_limits():
            report = report_of(
                table.engine,
                roles.quasi_identifiers,
                roles.sensitive,
                ReportOptions(
                    max_combination_size=combinations,
                    thresholds=QirThresholds(alpha, beta),
                    sampling_fraction=sampling_fraction,
                    weights=weights or None,
                    suda=suda_options,
                ),
            )
    except ValueError as error:
        raise Unprocessable(str(error)) from None
    return Report.model_validate(report.as_dict())


def _suda_options(
    asked: bool, fraction: float | None, max_msu: int | None, quasi_identifiers: tuple[str, ...]
) -> SudaOptions | None:
    """The SUDA the request asks for, or the field it gets wrong."""
    if not asked:
        if fraction is not None or max_msu is not None:
            raise Unprocessable("suda_dis_fraction and suda_max_msu need suda=true")
        return None
    if not quasi_identifiers:
        raise Unprocessable("suda needs quasi_identifiers: SUDA searches their combinations")
    if max_msu is not None and max_msu > len(quasi_identifiers):
        raise Unprocessable(
            f"suda_max_msu is between 1 and the {len(quasi_identifiers)} quasi-identifiers, "
            f"got {max_msu}"
        )
    return SudaOptions(
        dis_fraction=DEFAULT_DIS_FRACTION if fraction is None else fraction,
        max_msu_size=max_msu,
        max_bits=BROKER_MAX_UNIQUE_BITS,
    )
