from typing import Annotated

from fastapi import APIRouter, Form, Request

from broker.analysis.schemas import Report
from broker.columns.roles import NAMES_MAX_LENGTH, parse_names
from broker.errors import FAULT_EXAMPLES, Unprocessable, responses
from broker.intake.tables import counting_limits, open_upload
from broker.metrics.report import ReportOptions, report_of
from broker.metrics.risk import DEFAULT_ALPHA, DEFAULT_BETA, QirThresholds
from broker.web.deps import RateLimitedCaller, SettingsDep, SpooledUpload

router = APIRouter(prefix="/v1/analyze", tags=["Measurement"])


@router.post(
    "",
    response_model=Report,
    responses=responses(400, 401, 403, 413, 422, 429, 503, 507, examples=FAULT_EXAMPLES),
    summary="Measure a dataset (no policy, nothing stored)",
    description="Mmaq of every attribute and of the quasi-identifiers, k, l, t, the "
    "re-identification risks and the riskiest column combinations, as `fedbroker analyze` "
    "reports them. Any member or admin; nothing is kept.",
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
) -> Report:
    table = open_upload(
        upload, settings, parse_names(quasi_identifiers), parse_names(sensitive), None
    )
    roles = table.roles
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
                ),
            )
    except ValueError as error:
        raise Unprocessable(str(error)) from None
    return Report.model_validate(report.as_dict())
