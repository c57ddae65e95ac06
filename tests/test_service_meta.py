"""What a grpcurl user or a load balancer sees: server reflection, standard health, rules and ping."""

from __future__ import annotations

import asyncio
import shutil
import subprocess

import grpc
import pytest
from google.protobuf import descriptor_pool, json_format, message_factory
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from protos.tablehall.v1 import matches_pb2
from tablehall.client import TablehallError
from tests.over_grpc import Service, serve

MATCHES = "tablehall.v1.Matches"
HEALTH = "grpc.health.v1.Health"


async def listed(channel: grpc.aio.Channel) -> list[str]:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    names: list[str] = []
    async for reply in stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")])):
        names += [s.name for s in reply.list_services_response.service]
    return names


def test_reflection_lists_the_services() -> None:
    async def body(service: Service) -> None:
        names = await listed(service.client.channel)
        assert MATCHES in names and HEALTH in names
        assert "tablehall.v1.MatchHost" not in names, "the internal worker API is not public"

    serve(body)


def test_reflection_describes_matches_well_enough_to_call_it() -> None:
    """What grpcurl does: fetch the descriptors by reflection alone, then call a method with them."""

    def described(address: str) -> tuple[list[str], str, str]:
        with grpc.insecure_channel(address) as channel:
            pool = descriptor_pool.DescriptorPool(ProtoReflectionDescriptorDatabase(channel))
            matches = pool.FindServiceByName(MATCHES)
            methods = [m.name for m in matches.methods]
            rules = matches.methods_by_name["GetRules"]
            request_class = message_factory.GetMessageClass(rules.input_type)
            reply_class = message_factory.GetMessageClass(rules.output_type)
            call = channel.unary_unary(
                f"/{MATCHES}/GetRules",
                request_serializer=request_class.SerializeToString,
                response_deserializer=reply_class.FromString,
            )
            reply = call(json_format.ParseDict({"game": "spectacular-bid"}, request_class()), timeout=5)
            return methods, reply.game, reply.text

    async def body(service: Service) -> None:
        methods, game, text = await asyncio.to_thread(described, service.address)
        assert set(methods) >= {"CreateMatch", "Act", "Watch", "GetView", "GetRules", "GetRecord", "Ping"}
        assert game == "spectacular-bid" and len(text) > 500

    serve(body)


@pytest.mark.skipif(shutil.which("grpcurl") is None, reason="grpcurl is not installed")
def test_grpcurl_lists_the_services() -> None:
    async def body(service: Service) -> str:
        done = await asyncio.to_thread(
            subprocess.run,
            ["grpcurl", "-plaintext", service.address, "list"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return done.stdout

    out = serve(body)
    assert MATCHES in out and HEALTH in out


def test_health_reports_serving_then_not_serving_on_shutdown() -> None:
    async def body(service: Service) -> None:
        health = health_pb2_grpc.HealthStub(service.client.channel)
        for name in ("", MATCHES):
            reply = await health.Check(health_pb2.HealthCheckRequest(service=name), timeout=5)
            assert reply.status == health_pb2.HealthCheckResponse.SERVING, name
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await health.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=5)
        assert caught.value.code() == grpc.StatusCode.NOT_FOUND
        # graceful shutdown reports NOT_SERVING first
        service.gateway.health.enter_graceful_shutdown()
        reply = await health.Check(health_pb2.HealthCheckRequest(service=MATCHES), timeout=5)
        assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING

    serve(body)


def test_rules_need_no_token_and_do_not_touch_a_running_clock() -> None:
    async def body(service: Service) -> None:
        for game, words in (("spectacular-bid", ("Spectacular Bid",)), ("501", ("501",))):
            text = await service.client.rules(game)  # the SDK's client sends no token
            assert all(w in text for w in words) and len(text) > 500
        with pytest.raises(TablehallError) as caught:
            await service.client.rules("chess")
        assert caught.value.status == grpc.StatusCode.NOT_FOUND and "chess" in str(caught.value)
        # reading the rules mid-match changes nothing: the seat's view is byte-identical around it
        created = await service.client.create_match("spectacular-bid", ["Ana", "Bia"])
        seats = [service.client.seat(created.match_id, t) for t in created.tokens]
        for seat in seats:
            await seat.act({"do": "ready"})
        before = await seats[0].view()
        await service.client.rules("spectacular-bid")
        assert await seats[0].view() == before
        assert before[1]["clock_running"] is not None

    serve(body)


def test_ping() -> None:
    async def body(service: Service) -> None:
        for _ in range(3):
            await service.client.ping()  # raises unless the server answers
        reply = await service.stub.Ping(matches_pb2.PingRequest(), timeout=5)
        assert reply.ByteSize() == 0

    serve(body)
